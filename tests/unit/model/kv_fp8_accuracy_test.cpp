// Would an FP8 (E4M3) KV cache beat Q8_0? The measurement behind docs/quantization.md's "FP8
// (e4m3) KV cache" section, on real attention inputs: the default model prefills the first
// kTokens tokens of data/kjv.txt (a fixed paragraph when the corpus is absent) with an f32 KV
// cache and exact activations; a recording backend keeps every layer's queries, and the cache
// gives every layer's K (after RoPE) and V. Each layer's attention is then recomputed by the CPU
// backend with K and V rounded to each candidate format, and compared with the f16-rounded cache:
// NMSE = sum((out - ref)^2) / sum(ref^2) over all rows and heads of the layer, per layer. The
// NMSE of K and V themselves is against the unrounded (f32) values.
//
// Prints the table; asserts only what must hold whatever the numbers (finite NMSEs, f32 < Q8_0 <
// Q4_0 against f16, and the rounding here giving the engine's own Q8_0/Q4_0/F16 cache bit for bit).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../gguf/gguf_test_util.h"
#include "../quant/e4m3.h"
#include "backend/cpu/cpu_backend.h"
#include "engine/sequence_kv_cache.h"
#include "model/layer_params.h"
#include "model/llama_model.h"
#include "quant/dequantize.h"
#include "quant/half.h"
#include "quant/quantize.h"
#include "quant/quantize_util.h"
#include "recording_backend.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

constexpr int64_t kTokens = 512;
constexpr int kThreads = 2;

// Used when data/kjv.txt (tools/fetch_corpus.sh) is absent.
constexpr const char* kFallbackText =
    "The history of the city begins with a small settlement on an island in the river, where "
    "fishermen and traders built their houses of wood and clay. Over the centuries the town grew "
    "beyond the water, bridges joined the banks, and markets, churches and schools filled the "
    "streets. Merchants came from distant lands to sell cloth, spices and wine, and scholars "
    "gathered in the colleges to read, to argue and to write. Wars and fires destroyed whole "
    "quarters more than once, yet each time the people rebuilt them, wider and stronger than "
    "before, until the old walls could no longer hold the crowds that lived within them.";

// The text to prefill and where it came from.
std::pair<std::string, std::string> corpus() {
  const std::string path = testing::source_dir() + "/data/kjv.txt";
  std::ifstream f(path);
  if (!f) return {kFallbackText, "a fixed paragraph (data/kjv.txt absent)"};
  std::string text(16384, '\0');  // ~4 characters per token: enough for kTokens
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  text.resize(text.rfind('\n') + 1);  // whole lines: no cut UTF-8 sequence
  return {text, "data/kjv.txt"};
}

// One layer's attention inputs: q [n][n_head * head_dim], k and v [n][n_head_kv * head_dim].
struct LayerInputs {
  std::vector<float> q, k, v;
};

// Rounds one layer's K or V ([n][n_head_kv][head_dim]) to a format and back to f32.
using RoundFn = std::function<std::vector<float>(const std::vector<float>&, const AttentionShape&)>;

struct Format {
  const char* name;
  double bytes_per_value;  // storage per K or V value, scales included
  RoundFn round;
  std::optional<GgmlType> engine = std::nullopt;  // the engine's cache type that rounds the same
};
// Indices into formats(): the reference and the engine's quantized types.
constexpr size_t kF32 = 0, kRef = 1, kQ8 = 2, kQ4 = 3;

std::vector<float> round_each(const std::vector<float>& x, float (*f)(float)) {
  std::vector<float> out(x.size());
  std::transform(x.begin(), x.end(), out.begin(), f);
  return out;
}

// Through the engine's own row quantizer and dequantizer, one (position, head) row at a time as
// the cache stores it.
std::vector<float> round_ggml(const std::vector<float>& x, const AttentionShape& s, GgmlType type) {
  const size_t row_bytes = *ggml_row_bytes(type, static_cast<uint64_t>(s.head_dim));
  std::vector<uint8_t> row(row_bytes);
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); i += static_cast<size_t>(s.head_dim)) {
    EXPECT_TRUE(quantize_row(type, x.data() + i, row.data(), s.head_dim).ok());
    EXPECT_TRUE(dequantize_row(type, row.data(), out.data() + i, s.head_dim).ok());
  }
  return out;
}

// E4M3 of x / scale, times scale, with one f32 scale = amax / 448 per KV head over all positions
// (vLLM's per-tensor k_scale/v_scale, finer: per layer and head, and computed from the data it
// rounds, so an upper bound on what a calibrated scale achieves).
std::vector<float> round_e4m3_per_head(const std::vector<float>& x, const AttentionShape& s) {
  const int64_t hd = s.head_dim, kv_dim = s.n_head_kv * hd, n = x.size() / kv_dim;
  std::vector<float> out(x.size());
  for (int64_t h = 0; h < s.n_head_kv; ++h) {
    float amax = 0.0f;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t d = 0; d < hd; ++d) amax = std::max(amax, std::fabs(x[t * kv_dim + h * hd + d]));
    }
    const float scale = amax / testing::kE4m3Max;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t d = 0; d < hd; ++d) {
        const int64_t i = t * kv_dim + h * hd + d;
        out[i] = scale == 0.0f ? 0.0f : testing::round_e4m3(x[i] / scale) * scale;
      }
    }
  }
  return out;
}

// E4M3 with an fp16 scale per 32 consecutive values (Q8_0's block and scale: 34 bytes per 32
// values), the scale amax / 448 rounded away from zero as Q8_0 rounds amax / 127.
std::vector<float> round_e4m3_per_block(const std::vector<float>& x, const AttentionShape&) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0.0f;
    for (size_t j = b; j < b + 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = fp16_to_f32(quant_detail::fp16_round_away(amax / testing::kE4m3Max));
    for (size_t j = b; j < b + 32; ++j) {
      out[j] = d == 0.0f ? 0.0f : testing::round_e4m3(x[j] / d) * d;
    }
  }
  return out;
}

std::vector<Format> formats() {
  auto ggml = [](GgmlType t) {
    return
        [t](const std::vector<float>& x, const AttentionShape& s) { return round_ggml(x, s, t); };
  };
  return {
      {"f32 (unrounded)", 4.0, [](const auto& x, const auto&) { return x; }},
      {"f16 (reference)", 2.0, ggml(GgmlType::kF16), GgmlType::kF16},
      {"q8_0", 34.0 / 32, ggml(GgmlType::kQ8_0), GgmlType::kQ8_0},
      {"q4_0", 18.0 / 32, ggml(GgmlType::kQ4_0), GgmlType::kQ4_0},
      {"e4m3, scale 1", 1.0,
       [](const auto& x, const auto&) { return round_each(x, testing::round_e4m3); }},
      {"e4m3, scale per (layer, head)", 1.0, round_e4m3_per_head},
      {"e4m3, fp16 scale per 32", 34.0 / 32, round_e4m3_per_block},
  };
}

double nmse(const std::vector<float>& got, const std::vector<float>& ref) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    err += (got[i] - double(ref[i])) * (got[i] - double(ref[i]));
    norm += double(ref[i]) * ref[i];
  }
  return err / norm;
}

// Causal attention of n rows over K and V stored as `type` (quantized by the backend's store_kv):
// the engine's CPU attention, one sequence in blocks of 16.
std::vector<float> attention(CpuBackend& b, const LayerInputs& in, const AttentionShape& s,
                             GgmlType type) {
  const int64_t kv_dim = s.n_head_kv * s.head_dim, n = in.k.size() / kv_dim;
  const int32_t bs = 16, n_blocks = static_cast<int32_t>((n + bs - 1) / bs);
  const size_t bytes = n_blocks * s.n_head_kv * bs * *ggml_row_bytes(type, s.head_dim);
  std::vector<uint8_t> kc(bytes), vc(bytes);
  std::vector<int32_t> table(n_blocks);
  for (int32_t i = 0; i < n_blocks; ++i) table[i] = i;
  const AttentionSeq seq{0, static_cast<int32_t>(n), 0,
                         KvLayerView{kc.data(), vc.data(), table.data(), n_blocks, bs, type}};
  std::vector<float> out(in.q.size());
  EXPECT_TRUE(b.plan_attention(AttentionStep{&seq, 1, n, static_cast<int32_t>(n), s}).ok());
  EXPECT_TRUE(b.store_kv(in.k.data(), in.v.data(), 0).ok());
  EXPECT_TRUE(b.attention(in.q.data(), 0, out.data()).ok());
  return out;
}

// K or V of layer `il` from an f32 SequenceKvCache view, as [n][n_head_kv][head_dim].
std::vector<float> gather(const KvSequenceView& view, int64_t il, bool k, int64_t n,
                          const AttentionShape& s) {
  const auto* pool = static_cast<const float*>(k ? view.layer(il).k : view.layer(il).v);
  const int64_t hd = s.head_dim, kv_dim = s.n_head_kv * hd, bs = view.block_size;
  std::vector<float> out(n * kv_dim);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < s.n_head_kv; ++h) {
      const float* row = pool + (((t / bs) * s.n_head_kv + h) * bs + t % bs) * hd;
      std::copy(row, row + hd, out.begin() + t * kv_dim + h * hd);
    }
  }
  return out;
}

TEST(KvFp8AccuracyTest, AttentionNmseOfKvFormatsOnTheDefaultModel) {
  const std::shared_ptr<const GgufFile> gguf = testing::open_default_model();
  if (!gguf) GTEST_SKIP() << testing::kNoDefaultModel;
  auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const auto [text, source] = corpus();
  std::vector<int32_t> ids = (*tok)->encode(text, /*add_special=*/true, /*parse_special=*/false);
  ids.resize(std::min<size_t>(ids.size(), kTokens));

  // Prefill with an f32 cache, recording every layer's queries.
  auto recorder = std::make_unique<testing::RecordingBackend>(kThreads);
  testing::RecordingBackend* rec = recorder.get();
  auto model = LlamaModel::create(gguf, std::move(recorder));
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelConfig& c = (*model)->config();
  const AttentionShape s = attention_shape(c);
  const auto n = static_cast<int64_t>(ids.size());
  auto kv = SequenceKvCache::create(c, n);
  ASSERT_TRUE(kv.ok()) << kv.error().message;
  const ForwardSeq seq{ids, 0, kv->view()};
  ASSERT_TRUE((*model)->forward({&seq, 1}, ActQuant::kNone).ok());
  ASSERT_EQ(rec->queries().size(), static_cast<size_t>(c.n_layer));

  const std::vector<Format> fmts = formats();
  const size_t n_fmt = fmts.size();
  // Per format, per layer: NMSE of the attention output (vs f16), of K and of V (vs f32).
  std::vector<std::vector<double>> att(n_fmt), knm(n_fmt), vnm(n_fmt);
  // Range of K and V (index 0, 1): the largest |x| and the share of values below 2^-6, which
  // E4M3 with scale 1 holds only as subnormals (absolute step 2^-9).
  double amax[2] = {0, 0}, n_small[2] = {0, 0};
  CpuBackend cpu(kThreads);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerInputs exact{rec->queries()[il], gather(kv->view(), il, true, n, s),
                            gather(kv->view(), il, false, n, s)};
    for (int i = 0; i < 2; ++i) {
      for (float x : i == 0 ? exact.k : exact.v) {
        amax[i] = std::max(amax[i], double(std::fabs(x)));
        n_small[i] += std::fabs(x) < 0x1p-6f;
      }
    }
    std::vector<std::vector<float>> outs;
    for (size_t fi = 0; fi < n_fmt; ++fi) {
      const LayerInputs r{exact.q, fmts[fi].round(exact.k, s), fmts[fi].round(exact.v, s)};
      knm[fi].push_back(nmse(r.k, exact.k));
      vnm[fi].push_back(nmse(r.v, exact.v));
      outs.push_back(attention(cpu, r, s, GgmlType::kF32));
      if (il == 0 && fmts[fi].engine) {
        // Rounding K/V here and attending in f32 is what the engine's own cache computes.
        EXPECT_EQ(outs.back(), attention(cpu, exact, s, *fmts[fi].engine)) << fmts[fi].name;
      }
    }
    for (size_t fi = 0; fi < n_fmt; ++fi) att[fi].push_back(nmse(outs[fi], outs[kRef]));
  }

  auto mean = [](const std::vector<double>& x) {
    double sum = 0;
    for (double v : x) sum += v;
    return sum / x.size();
  };
  auto worst = [](const std::vector<double>& x) {
    return std::max_element(x.begin(), x.end()) - x.begin();
  };
  std::printf("[ kv fp8 ] %s, %lld tokens, %lld layers x %d KV heads x head_dim %d\n",
              source.c_str(), static_cast<long long>(n), static_cast<long long>(c.n_layer),
              s.n_head_kv, s.head_dim);
  const double n_values = double(c.n_layer) * n * s.n_head_kv * s.head_dim;
  std::printf("[ kv fp8 ] max |K| %.1f, |K| < 2^-6: %.2f%%; max |V| %.2f, |V| < 2^-6: %.2f%%\n",
              amax[0], 100 * n_small[0] / n_values, amax[1], 100 * n_small[1] / n_values);
  std::printf("[ kv fp8 ] %-30s %6s | %-22s | %-22s | %-22s\n", "format", "B/val",
              "attention NMSE vs f16", "K NMSE vs f32", "V NMSE vs f32");
  std::printf("[ kv fp8 ] %-30s %6s | %-22s | %-22s | %-22s\n", "", "", "mean   worst (layer)",
              "mean   worst (layer)", "mean   worst (layer)");
  for (size_t fi = 0; fi < n_fmt; ++fi) {
    std::printf("[ kv fp8 ] %-30s %6.4f", fmts[fi].name, fmts[fi].bytes_per_value);
    for (const auto* col : {&att[fi], &knm[fi], &vnm[fi]}) {
      const auto w = worst(*col);
      std::printf(" | %.2e %.2e (%2lld)", mean(*col), (*col)[w], static_cast<long long>(w));
    }
    std::printf("\n");
    for (const auto* col : {&att[fi], &knm[fi], &vnm[fi]}) {
      for (double x : *col) EXPECT_TRUE(std::isfinite(x) && x >= 0) << fmts[fi].name << " " << x;
    }
  }
  // Each of f32, Q8_0, Q4_0 holds more bits of every value than the next.
  EXPECT_LT(mean(att[kF32]), mean(att[kQ8]));
  EXPECT_LT(mean(att[kQ8]), mean(att[kQ4]));
}

}  // namespace
}  // namespace novaserve
