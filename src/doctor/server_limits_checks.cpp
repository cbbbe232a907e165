// Limits that cap the server below what its flags ask for: the listen backlog (somaxconn) and
// the open-files limit.
#include <sstream>
#include <string>

#include "doctor/check_context.h"
#include "doctor/deploy_sysctl.h"
#include "doctor/nofile_rule.h"

namespace novaserve::doctor {
namespace {

void check_somaxconn(const CheckContext& ctx, std::vector<Finding>& out) {
  const std::string path = "/proc/sys/net/core/somaxconn";
  const auto text = ctx.fs.read_line(path);
  if (!text) {
    // No procfs net (some containers): the cap cannot be judged from here.
    out.push_back(not_checked("os.somaxconn-low", path, "sysctl net.core.somaxconn"));
    return;
  }
  const auto v = parse_int(*text);
  if (!v) {
    out.push_back({"os.somaxconn-low",
                   Severity::kInfo,
                   "could not read " + path + " as a number",
                   {{path, text->substr(0, 80)}},
                   "sysctl net.core.somaxconn"});
    return;
  }
  if (*v >= ctx.in.backlog) return;
  // The drop-in sets kDeploySomaxconn: enough for a --backlog up to that, else it must be raised.
  const std::string persist =
      ctx.in.backlog <= kDeploySomaxconn
          ? " (persist: deploy/sysctl/99-novaserve.conf, which sets " +
                std::to_string(kDeploySomaxconn) + ")"
          : "; persist: install deploy/sysctl/99-novaserve.conf and raise its net.core.somaxconn "
            "from " +
                std::to_string(kDeploySomaxconn) + " to " + std::to_string(ctx.in.backlog) +
                " (/etc/sysctl.d/99-novaserve.conf), then sudo sysctl --system";
  // listen(2): "If the backlog argument is greater than the value in somaxconn, then it is
  // silently capped to that value". A burst larger than the cap is dropped by the kernel.
  out.push_back({"os.somaxconn-low",
                 Severity::kWarning,
                 "net.core.somaxconn " + std::to_string(*v) + " caps the listen backlog below " +
                     std::to_string(ctx.in.backlog) +
                     " (--backlog): connection bursts are dropped by the kernel",
                 {{path, std::to_string(*v)}, {"--backlog", std::to_string(ctx.in.backlog)}},
                 "sysctl -w net.core.somaxconn=" + std::to_string(ctx.in.backlog) + persist});
}

void check_nofile(const CheckContext& ctx, std::vector<Finding>& out) {
  const std::string path = "/proc/self/limits";
  const auto text = ctx.fs.read(path);
  if (!text) {
    out.push_back(not_checked("os.nofile-low", path, "ulimit -n"));
    return;
  }
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(14));
    std::string soft;
    std::string hard;
    fields >> soft >> hard;
    if (soft == "unlimited") return;
    const auto v = parse_int(soft);
    const int64_t need = required_open_files(ctx.in.max_queued_requests, ctx.in.max_num_seqs);
    if (!v) {
      out.push_back({"os.nofile-low",
                     Severity::kInfo,
                     "could not read the open-files limit",
                     {{path, trim(line)}},
                     "ulimit -n"});
      return;
    }
    if (*v >= need) return;
    out.push_back(
        {"os.nofile-low",
         Severity::kWarning,
         "the open-files limit " + std::to_string(*v) + " is below the " + std::to_string(need) +
             " the flags need (--max-queued-requests + --max-num-seqs + " +
             std::to_string(kOpenFilesMargin) + "): accept() fails with EMFILE under load",
         {{path, "soft " + soft + ", hard " + hard},
          {"--max-queued-requests", std::to_string(ctx.in.max_queued_requests)},
          {"--max-num-seqs", std::to_string(ctx.in.max_num_seqs)}},
         "ulimit -n " + std::to_string(need) +
             " before serve, or LimitNOFILE=" + std::to_string(need) + " in the systemd unit"});
    return;
  }
  out.push_back({"os.nofile-low",
                 Severity::kInfo,
                 "not checked: " + path + " has no \"Max open files\" line",
                 {{path, "no Max open files line"}},
                 "ulimit -n"});
}

}  // namespace

void check_server_limits(const CheckContext& ctx, std::vector<Finding>& out) {
  check_somaxconn(ctx, out);
  check_nofile(ctx, out);
}

}  // namespace novaserve::doctor
