#include "loadgen/server_sample.h"

#include <cstdlib>
#include <fstream>
#include <string>

namespace novaserve {

std::optional<double> prometheus_value(std::string_view text, std::string_view name) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line.front() == '#') continue;
    const size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string_view::npos) continue;
    const std::string_view metric = line.substr(0, name_end);
    const bool match = metric == name || (metric.size() > name.size() &&
                                          metric.substr(metric.size() - name.size()) == name &&
                                          (metric[metric.size() - name.size() - 1] == '_' ||
                                           metric[metric.size() - name.size() - 1] == ':'));
    if (!match) continue;
    size_t value_start = name_end;
    if (line[name_end] == '{') {
      // Label values are quoted and may hold '}' or spaces; skip them as quoted strings.
      bool quoted = false;
      size_t i = name_end + 1;
      for (; i < line.size(); ++i) {
        if (quoted && line[i] == '\\') {
          ++i;
        } else if (line[i] == '"') {
          quoted = !quoted;
        } else if (!quoted && line[i] == '}') {
          break;
        }
      }
      if (i >= line.size()) return std::nullopt;
      value_start = i + 1;
    }
    const std::string value(line.substr(value_start));
    char* parse_end = nullptr;
    const double v = std::strtod(value.c_str(), &parse_end);
    if (parse_end == value.c_str()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

void parse_server_metrics(std::string_view text, ServerSample& sample) {
  sample.kv_cache_usage = prometheus_value(text, "kv_cache_usage_perc");
  sample.requests_running = prometheus_value(text, "num_requests_running");
  sample.requests_waiting = prometheus_value(text, "num_requests_waiting");
}

std::optional<int64_t> process_rss_bytes(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      // "VmRSS:     123456 kB"
      return std::strtoll(line.c_str() + 6, nullptr, 10) * 1024;
    }
  }
  return std::nullopt;
}

}  // namespace novaserve
