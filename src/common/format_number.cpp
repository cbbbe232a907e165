#include "common/format_number.h"

#include <cstdio>

namespace novaserve {

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace novaserve
