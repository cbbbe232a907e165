// A one-line text progress bar for long CLI jobs (quantize, convert, perplexity), redrawn in
// place with \r.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string_view>

namespace novaserve {

/// Draws "[=====     ]  42.0%" on `out` (stderr by default), overwriting the previous bar;
/// with a `unit` it draws the counts instead of the percentage: "[=====     ] 42/100 windows".
/// Ends the line when `done == total`. `total == 0` draws a full bar. Callers draw it only when
/// the stream is a terminal (isatty), so logs and pipes never get \r-garbled lines.
void draw_progress_bar(uint64_t done, uint64_t total, std::FILE* out = stderr,
                       std::string_view unit = {});

}  // namespace novaserve
