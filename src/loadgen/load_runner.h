// One load test: open-loop Poisson arrivals or closed-loop concurrency for a duration.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/result.h"
#include "loadgen/request_record.h"
#include "loadgen/server_sample.h"
#include "loadgen/stream_request.h"
#include "loadgen/workload.h"

namespace novaserve {

struct LoadOptions {
  /// Target, endpoints, key, model and temperature; run_start is set by run_load.
  StreamRequestConfig request;
  double qps = 0;           ///< > 0: open loop, Poisson arrivals at this rate (req/s)
  int32_t concurrency = 0;  ///< > 0: closed loop, this many requests always in flight
  double duration_s = 0;    ///< requests are started during [0, duration_s)
  /// Arrival times' seed (open loop; the workload has its own copy of --seed for shapes).
  uint64_t seed = 0;
  /// Request i of this run sends workload.request(index_base + i) (its record's index stays
  /// i). Runs against one server with disjoint ranges send no prompt twice, so no run finds
  /// another's unique prompt text in the server's prefix cache (kRunIndexStride).
  uint64_t index_base = 0;
  double request_timeout_s = 300;  ///< a request still running after this fails with "timeout"
  /// After duration_s, running requests may finish for this long; the rest fail "unfinished".
  double drain_timeout_s = 60;
  int32_t client_threads = 2;  ///< I/O threads of the client
  /// > 0: GET /metrics (and read --server-pid's RSS) every this many seconds.
  double sample_interval_s = 0;
  int server_pid = 0;  ///< > 0: sample this local process's RSS
  /// The first SIGINT/SIGTERM during the run stops it early: no new requests start, running
  /// ones finish, and the result is marked interrupted (for soaks stopped by hand).
  bool stop_on_signal = false;
  /// Called after each sample with the number of finished requests (on an I/O thread).
  std::function<void(const ServerSample&, size_t finished)> on_sample;
};

struct LoadResult {
  std::vector<RequestRecord> records;  ///< every request started, ordered by index
  std::vector<ServerSample> samples;
  double wall_s = 0;            ///< from the start to the last request's end
  bool interrupted = false;     ///< stopped early by a signal (LoadOptions::stop_on_signal)
  double interrupted_at_s = 0;  ///< when, in seconds since the start
};

/// Runs the load until the duration is over and every request has finished or failed.
/// Exactly one of qps and concurrency must be > 0. Errors: kInvalidInput for bad options
/// (both/neither mode, duration <= 0, client_threads < 1). Failures of single requests are
/// records with an error, not an error of the run.
Result<LoadResult> run_load(const LoadOptions& options, const Workload& workload);

/// Requests of the warm-up, kept apart from those of measured runs (request i of a run is
/// workload.request(i); warm-up request k is workload.request(kWarmupIndexBase + k)).
inline constexpr uint64_t kWarmupIndexBase = uint64_t{1} << 62;
/// Run n of a series (the probes and confirmations of --find-max-qps) starts at request
/// n * kRunIndexStride; the warm-up load at kWarmupLoadIndexBase.
inline constexpr uint64_t kRunIndexStride = uint64_t{1} << 32;
inline constexpr uint64_t kWarmupLoadIndexBase = kWarmupIndexBase + kRunIndexStride;

/// Sends `count` workload requests one after another, each bounded by
/// options.request_timeout_s, and returns their records (for the caller to check, not to
/// count): a server's first requests pay for page faults and, in fin-qa, for filling the prefix
/// cache, which the first measured run would otherwise absorb. Stops at the first failure.
std::vector<RequestRecord> run_warmup(const LoadOptions& options, const Workload& workload,
                                      int32_t count);

}  // namespace novaserve
