// Decode-step graphs: one captured CUDA/HIP graph per batch bucket (gpu_runner.h's
// decode_bucket), replayed for every later decode step of that bucket. A replay launches the
// whole step (hundreds of kernels) with one call, so the host's launch overhead no longer
// bounds small-batch decode. Graphs capture device addresses, so the runner keeps its step
// inputs and workspaces at fixed addresses and clears the graphs whenever one moves.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "backend/gpu/platform/gpu_status.h"
#include "backend/gpu/platform/vendor.h"
#include "common/result.h"

namespace novaserve::gpu {

/// The executable graphs of one runner, by bucket. Not thread-safe.
class DecodeGraphs {
 public:
  DecodeGraphs() = default;
  ~DecodeGraphs() { clear(); }
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  bool has(int32_t bucket) const { return graphs_.count(bucket) != 0; }

  /// What capture() made: its capture plus instantiation time, and the graph's kernel nodes.
  struct Captured {
    double seconds = 0.0;
    size_t kernels = 0;
  };

  /// Captures what `enqueue()` (returning Status) launches on `stream` as the graph of `bucket`
  /// without running it, replacing any graph of that bucket, and says how long that took and how
  /// many kernels the graph launches. `enqueue` must launch only graph-capturable work (kernels,
  /// asynchronous copies; no allocation or synchronization). Errors: enqueue's, or kInternal
  /// naming the failed graph call (the stream leaves capture mode either way).
  template <typename Enqueue>
  Result<Captured> capture(int32_t bucket, cudaStream_t stream, Enqueue&& enqueue) {
    const auto t0 = std::chrono::steady_clock::now();
    NOVASERVE_GPU_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const Status launched = enqueue();
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (!launched.ok()) {
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      return launched.error();
    }
    NOVASERVE_RETURN_IF_ERROR(gpu_status(ended, "cudaStreamEndCapture"));
    Captured c;
    c.kernels = kernel_nodes(graph);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = graph_instantiate(&exec, graph);
    (void)cudaGraphDestroy(graph);
    NOVASERVE_RETURN_IF_ERROR(gpu_status(made, "cudaGraphInstantiate"));
    drop(bucket);
    graphs_[bucket] = exec;
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return c;
  }

  /// Replays the graph of `bucket` (which must exist) on `stream`. Errors: kInternal.
  Status launch(int32_t bucket, cudaStream_t stream) {
    return gpu_status(cudaGraphLaunch(graphs_.at(bucket), stream), "cudaGraphLaunch");
  }

  /// Destroys every graph.
  void clear() {
    for (auto& [bucket, exec] : graphs_) (void)cudaGraphExecDestroy(exec);
    graphs_.clear();
  }

 private:
  // Kernel nodes of `graph` (0 when the runtime cannot list them: the count is for logs).
  static size_t kernel_nodes(cudaGraph_t graph) {
    size_t n = 0;
    if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess) return 0;
    std::vector<cudaGraphNode_t> nodes(n);
    if (cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return 0;
    size_t kernels = 0;
    for (size_t i = 0; i < n; ++i) {
      cudaGraphNodeType type;
      if (cudaGraphNodeGetType(nodes[i], &type) == cudaSuccess && type == cudaGraphNodeTypeKernel) {
        ++kernels;
      }
    }
    return kernels;
  }

  void drop(int32_t bucket) {
    auto it = graphs_.find(bucket);
    if (it == graphs_.end()) return;
    (void)cudaGraphExecDestroy(it->second);
    graphs_.erase(it);
  }

  std::map<int32_t, cudaGraphExec_t> graphs_;
};

}  // namespace novaserve::gpu
