// The --svg chart of `novaserve loadgen`.
#pragma once

#include <string>
#include <vector>

#include "loadgen/request_record.h"
#include "loadgen/server_sample.h"

namespace novaserve {

/// An SVG chart: TTFT and E2E of each request (dots, seconds) against its start time, failed
/// requests as red crosses along the top; with samples, a second panel of KV-cache usage (%,
/// left axis) and server RSS (MiB, right axis) over the same time axis. At most 4000 requests
/// are drawn (evenly strided) so hour-long soaks stay viewable. Written by hand like
/// bench_svg (src/tools/bench/bench_report.h): no Debian C++ package draws SVG plots.
std::string latency_svg(const std::vector<RequestRecord>& records,
                        const std::vector<ServerSample>& samples, const std::string& title);

}  // namespace novaserve
