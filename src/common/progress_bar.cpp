#include "common/progress_bar.h"

namespace novaserve {

void draw_progress_bar(uint64_t done, uint64_t total, std::FILE* out, std::string_view unit) {
  constexpr int kWidth = 40;
  const double f = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int filled = static_cast<int>(f * kWidth);
  std::fprintf(out, "\r[%.*s%*s] ", filled,
               "========================================", kWidth - filled, "");
  if (unit.empty()) {
    std::fprintf(out, "%5.1f%%", f * 100.0);
  } else {
    std::fprintf(out, "%llu/%llu %.*s", static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total), static_cast<int>(unit.size()),
                 unit.data());
  }
  if (done == total) std::fputc('\n', out);
  std::fflush(out);
}

}  // namespace novaserve
