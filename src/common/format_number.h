// How error messages print a number that a user gave (a flag's value), shared by the CLI, the
// server's flags and loadgen's flags.
#pragma once

#include <string>

namespace novaserve {

/// `v` in printf's %g form: at most 6 significant digits, no trailing zeros ("1.5", "0.1",
/// "1e+30", "nan", "-inf").
std::string format_number(double v);

}  // namespace novaserve
