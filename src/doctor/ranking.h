// The order of findings: the one most likely to be *the* reason the GPU or the server cannot
// work comes first.
#pragma once

#include <string>
#include <vector>

#include "doctor/finding.h"

namespace novaserve::doctor {

/// The position of `id` in the causal order (0 first; ids not in the table come after all
/// known ones). The order follows what each failure explains: no GPU on the bus explains
/// everything; a driver refused by Secure Boot explains the unloaded driver; an unloaded driver
/// explains missing device nodes; missing nodes come before permissions on them; device access
/// before user-space libraries (a library cannot help without a device); libraries before
/// version pairing; then capacity, then performance tunables by how much latency they cost.
int rank_of(const std::string& id);

/// Every id the doctor can report, in rank order (docs/operations.md documents each).
const std::vector<std::string>& ranked_ids();

/// Sorts by severity (errors first), then rank_of, keeping the order of equal findings.
void rank_findings(std::vector<Finding>& findings);

}  // namespace novaserve::doctor
