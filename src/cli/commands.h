// Subcommand registration for the novaserve CLI. Each subcommand lives in its own
// src/cli/<cmd>.cpp and exposes one register function called from main.cpp.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace novaserve {

/// Adds `inspect FILE`: prints a GGUF file's header, metadata and tensor table to stdout. When the
/// subcommand runs it sets `exit_code` to 0 for a valid file, or to 2 after printing a one-line
/// error to stderr for a missing, unreadable or invalid file. `exit_code` must outlive `app`'s
/// parse.
void register_inspect(CLI::App& app, int& exit_code);

/// Adds `generate --model M --prompt P [...]`: runs the model on the CPU and streams the
/// completion to stdout, timing to stderr. Sets `exit_code` to 0 on success, or to 2 after a
/// one-line error on stderr (missing/invalid model file, unsupported architecture, bad flag
/// values such as a negative temperature).
void register_generate(CLI::App& app, int& exit_code);

/// Adds `tokenize --model M (--text T | --file F) [--ids-only] [--no-bos] [--special]`: prints
/// the token ids of the text (with pieces unless --ids-only) on one line. Sets `exit_code` to 0,
/// or to 2 after a one-line error on stderr (missing/invalid model, unreadable file, both or
/// neither of --text/--file).
void register_tokenize(CLI::App& app, int& exit_code);

/// Adds `serve --model M [...]`: the OpenAI-compatible HTTP server with continuous batching on
/// the CPU (flags: docs/api.md and `novaserve serve --help`). Sets `exit_code` to 0 after a
/// drain (first SIGTERM/SIGINT), or to 2 after a one-line error on stderr (bad flag values, an
/// unreadable or invalid model, a port that cannot be bound).
void register_serve(CLI::App& app, int& exit_code);

/// Adds `bench --model M [--batch 1,8,32] [--prompt 128,512,2048] [--gen 128] [--csv F]
/// [--json F] [--svg F] [--slo-itl-ms X]`: an offline grid sweep through the engine (no HTTP)
/// printing prefill tok/s, TTFT, decode tok/s per sequence and aggregate, ITL and peak memory.
/// Sets `exit_code` to 0, or to 2 after a one-line error on stderr (bad flags, an invalid model,
/// an unwritable output file).
void register_bench(CLI::App& app, int& exit_code);

/// Adds `synth --preset NAME --type T -o FILE [--seed S] [--threads N] [--tokenizer F]`: writes
/// a GGUF of a named architecture with deterministic random weights (src/tools/synth/synth.h). Sets
/// `exit_code` to 0, or to 2 after a one-line error on stderr for bad flags (unknown preset or
/// type, missing tokenizer source) or an output that cannot be written (a directory, a missing
/// directory, a failed write: an existing file there is kept).
void register_synth(CLI::App& app, int& exit_code);

/// Adds `quantize IN OUT --type T [--tensor-type REGEX=TYPE ...] [--keep-f16 REGEX ...]
/// [--output-type T] [--embd-type T] [--threads N]`: converts a GGUF model's tensors per
/// QuantizePolicy (src/quant/quantize_policy.h) and prints bytes per tensor class. Sets
/// `exit_code` to 0, or to 2 after a one-line error on stderr (missing/invalid input, unknown
/// type, malformed rule or bad regex, OUT equal to IN, unwritable OUT).
void register_quantize(CLI::App& app, int& exit_code);

/// Adds `perplexity --model M --file TEXT [--ctx 512] [--stride 256] [--max-tokens N]
/// [--threads N] [--exact]`: strided sliding-window perplexity (src/tools/perplexity/perplexity.h)
/// with a 95% confidence interval. Sets `exit_code` to 0, or to 2 after a one-line error on stderr
/// (missing/invalid model or file, bad --ctx/--stride, a text too short for one window).
void register_perplexity(CLI::App& app, int& exit_code);

/// Adds `loadgen --url URL (--qps Q | --concurrency C) --duration D [--workload fixed|fin-qa|
/// chat-mix] [--slo-ttft-p95 2s ...] [--find-max-qps] [--soak] [--json F] [--svg F]`: streams
/// completions at an OpenAI-compatible server and reports TTFT/ITL/E2E percentiles,
/// throughput, errors and goodput (src/loadgen/). Sets `exit_code` to 0 when the run completed
/// (missed SLOs included), or to 2 after a one-line error on stderr (bad flags or URL, https,
/// an unreachable server, a refused key, an unwritable output file).
void register_loadgen(CLI::App& app, int& exit_code);

/// Adds `convert HF_DIR OUT [--type f16|bf16|f32]`: converts a Hugging Face Llama-family
/// checkpoint (safetensors, config.json, tokenizer files) to GGUF (src/convert/hf_convert.h).
/// Sets `exit_code` to 0, or to 2 after a one-line error on stderr (bad --type, a missing or
/// invalid directory/config/safetensors/tokenizer, an unsupported architecture, an unwritable
/// output).
void register_convert(CLI::App& app, int& exit_code);

/// Adds `doctor [--root DIR] [--json] [--model M] [--backlog N] [--max-num-seqs N]
/// [--max-queued-requests N]`: prints the ranked findings of src/doctor (why the GPU or the
/// server cannot work well here). Sets `exit_code` to 0 when no finding is an error, 1 when one
/// is, or 2 after a one-line error on stderr (a flag out of range, a --root that is not a
/// directory, an unreadable --model).
void register_doctor(CLI::App& app, int& exit_code);

/// Adds `governor simulate --trace FILE [--json] [--slo-ttft-p95 D] [--slo-itl-p95 D]
/// [--governor-interval S] [--governor-up-windows N] [--governor-down-windows N]
/// [--governor-headroom H] [--seed N]`: energy and SLO-violating windows of the trace with and
/// without the SLO governor (src/telemetry/governor_sim.h). Sets `exit_code` to 0, or to 2
/// after a one-line error on stderr (a missing or malformed trace, bad flag values).
void register_governor(CLI::App& app, int& exit_code);

}  // namespace novaserve
