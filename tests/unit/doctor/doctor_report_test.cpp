// Whole-run behaviour of the doctor: healthy hosts, ranking of several faults, garbage files,
// vendor selection, the capacity check and the JSON form.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "doctor/report_json.h"
#include "doctor/report_text.h"
#include "fixture_tree.h"

namespace novaserve::doctor::testing {
namespace {

TEST(Doctor, HealthyAmdHostHasNoFindings) {
  FixtureTree tree(healthy_amd());
  const DoctorReport report = run(tree, healthy_inputs());
  EXPECT_TRUE(report.findings.empty()) << finding_list(report);
  EXPECT_EQ(report.exit_code(), 0);
  ASSERT_EQ(report.gpus.size(), 1u);
  EXPECT_EQ(report.gpus[0].vendor, GpuVendor::kAmd);
  EXPECT_EQ(report.gpus[0].pci_address, "0000:c1:00.0");
  EXPECT_EQ(report.gpus[0].numa_node, 0);
}

TEST(Doctor, HealthyNvidiaHostHasNoFindings) {
  FixtureTree tree(healthy_nvidia());
  const DoctorReport report = run(tree, healthy_inputs());
  EXPECT_TRUE(report.findings.empty()) << finding_list(report);
  EXPECT_EQ(report.exit_code(), 0);
  ASSERT_EQ(report.gpus.size(), 1u);
  EXPECT_EQ(report.gpus[0].vendor, GpuVendor::kNvidia);
}

TEST(Doctor, ChecksOnlyTheVendorsPresent) {
  // The AMD tree has no /dev/nvidia* and no libcuda, the NVIDIA tree no /dev/kfd.
  FixtureTree amd(healthy_amd());
  for (const auto& f : run(amd, healthy_inputs()).findings) {
    EXPECT_NE(f.id.rfind("nvidia.", 0), 0u) << f.id;
  }
  FixtureTree nv(healthy_nvidia());
  for (const auto& f : run(nv, healthy_inputs()).findings) EXPECT_NE(f.id.rfind("amd.", 0), 0u);
}

TEST(Doctor, FindsTheGpuThroughProcfsWhenThePciTreeIsHidden) {
  Manifest m = healthy_nvidia();
  for (auto it = m.begin(); it != m.end();) {
    it = it->first.rfind("/sys/bus/pci", 0) == 0 ? m.erase(it) : std::next(it);
  }
  m["/proc/driver/nvidia/gpus/0000:17:00.0/information"] = "Model: \t\t NVIDIA H200\n";
  FixtureTree tree(m);
  const DoctorReport report = run(tree, healthy_inputs());
  ASSERT_EQ(report.gpus.size(), 1u);
  EXPECT_EQ(report.gpus[0].vendor, GpuVendor::kNvidia);
  EXPECT_EQ(report.exit_code(), 0) << finding_list(report);
}

TEST(Doctor, NvidiaContainerLayoutIsHealthy) {
  // The layout of the H200 machine this project runs on: libcuda from the container toolkit's
  // /usr/local/nvidia/lib64 (on LD_LIBRARY_PATH), the CUDA forward-compatibility libcuda of an
  // older version in /usr/local/cuda-13.0/compat, no NUMA node for the GPU, no DRM class.
  Manifest m = healthy_nvidia();
  m.erase("/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  m.erase("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06");
  m["/proc/driver/nvidia/version"] =
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n";
  m["/sys/bus/pci/devices/0000:17:00.0/numa_node"] = "-1\n";
  m["/usr/local/nvidia/lib64/libcuda.so"] = "";
  m["/usr/local/nvidia/lib64/libcuda.so.1"] = "";
  m["/usr/local/nvidia/lib64/libcuda.so.580.159.04"] = "";
  m["/usr/local/cuda-13.0/compat/libcuda.so.1"] = "";
  m["/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"] = "";
  FixtureTree tree(m);
  DoctorInputs in = healthy_inputs();
  in.env["LD_LIBRARY_PATH"] = "/usr/local/nvidia/lib64:/usr/local/nvidia/lib";
  EXPECT_TRUE(run(tree, in).findings.empty()) << finding_list(run(tree, in));
  // With the compat directory first on the path, its older libcuda is not a mismatch.
  in.env["LD_LIBRARY_PATH"] = "/usr/local/cuda-13.0/compat:/usr/local/nvidia/lib64";
  EXPECT_TRUE(run(tree, in).findings.empty()) << finding_list(run(tree, in));
  // Without LD_LIBRARY_PATH there is no libcuda.so.1 on the loader's path.
  in.env.clear();
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].id, "nvidia.libcuda-missing");
}

TEST(Doctor, RanksTheBlockingFaultFirst) {
  // A tunable (info), a backlog cap (warning) and a missing /dev/kfd (error): kfd first.
  FixtureTree tree(healthy_amd());
  tree.write("/proc/sys/vm/swappiness", "60\n");
  tree.write("/proc/sys/net/core/somaxconn", "128\n");
  tree.remove("/dev/kfd");
  const DoctorReport report = run(tree, healthy_inputs());
  ASSERT_EQ(report.findings.size(), 3u) << finding_list(report);
  EXPECT_EQ(report.findings[0].id, "amd.kfd-missing");
  EXPECT_EQ(report.findings[1].id, "os.somaxconn-low");
  EXPECT_EQ(report.findings[2].id, "os.swappiness");
  EXPECT_EQ(report.exit_code(), 1);
}

TEST(Doctor, RanksTheCauseBeforeItsConsequences) {
  // An unloaded driver explains a missing render node; a permission problem comes after both.
  FixtureTree tree(healthy_amd());
  tree.remove("/dev/dri/renderD128");
  tree.remove("/sys/module/amdgpu");
  tree.write("/proc/modules", "");
  DoctorInputs in = healthy_inputs();
  in.user.gids = {4242};
  const DoctorReport report = run(tree, in);
  ASSERT_GE(report.findings.size(), 3u) << finding_list(report);
  EXPECT_EQ(report.findings[0].id, "amd.driver-not-loaded");
  EXPECT_EQ(report.findings[1].id, "amd.no-render-node");
  EXPECT_EQ(report.findings[2].id, "amd.kfd-permission");
}

TEST(Doctor, GarbageFilesGiveFindingsOrNothingNeverAnAbort) {
  const std::vector<std::string> junk = {
      "",    "\xff\xfe\x00garbage", "-1",    "99999999999999999999", "[", "0x", "1-",
      "3-1", "0-999999999",         "\n\n\n"};
  for (const auto& base : {healthy_amd(), healthy_nvidia()}) {
    for (const auto& value : junk) {
      Manifest m = base;
      for (auto& [path, content] : m) {
        if (path.rfind("/dev/", 0) != 0) content = value;
      }
      FixtureTree tree(m);
      const DoctorReport report = run(tree, healthy_inputs());
      // Whatever was found, it renders, also as JSON with invalid UTF-8 replaced, and the
      // text has only printable ASCII besides newlines (grep must not call it binary).
      const std::string text = render_text(report);
      EXPECT_FALSE(text.empty());
      for (const char c : text) {
        const auto b = static_cast<unsigned char>(c);
        ASSERT_TRUE(c == '\n' || (b >= 0x20 && b < 0x7f)) << static_cast<int>(b);
      }
      EXPECT_FALSE(report_json(report)
                       .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                       .empty());
    }
  }
}

TEST(Doctor, EmptyRootReportsNoGpuFirst) {
  FixtureTree tree(Manifest{});
  const DoctorReport report = run(tree, healthy_inputs());
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].id, "gpu.none-found");
  EXPECT_EQ(report.exit_code(), 1);
  EXPECT_EQ(report.kernel, "unknown");
}

TEST(Doctor, MissingRootIsAnError) {
  auto r = run_doctor("/nonexistent/doctor-root", healthy_inputs());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("--root"), std::string::npos);
}

std::string default_model() {
  return std::string(NOVASERVE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

TEST(DoctorCapacity, WeightsLargerThanTheGpuAreAnError) {
  if (!std::filesystem::exists(default_model())) GTEST_SKIP() << "no default model";
  FixtureTree tree(healthy_amd());
  tree.write("/sys/class/drm/card0/device/mem_info_vram_total", "67108864\n");  // 64 MiB
  DoctorInputs in = healthy_inputs();
  in.model_path = default_model();
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].id, "capacity.model-does-not-fit") << finding_list(report);
  EXPECT_EQ(report.findings[0].severity, Severity::kError);
}

TEST(DoctorCapacity, KvPoolTooSmallForEverySequenceIsAWarning) {
  if (!std::filesystem::exists(default_model())) GTEST_SKIP() << "no default model";
  // SmolLM2-135M: ~90 MB of weights, 30 layers x 3 KV heads x 64 x 2 x 2 bytes = 23040 bytes of
  // f16 KV per token, 8192-token context: ~189 MB per sequence, ~6 GB for 32. 1 GiB fits the
  // weights and 4 sequences.
  FixtureTree tree(healthy_amd());
  tree.write("/sys/class/drm/card0/device/mem_info_vram_total", "1073741824\n");
  DoctorInputs in = healthy_inputs();
  in.model_path = default_model();
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].id, "capacity.model-does-not-fit");
  EXPECT_EQ(report.findings[0].severity, Severity::kWarning);
  EXPECT_NE(report.findings[0].fix.find("--max-num-seqs 4"), std::string::npos)
      << report.findings[0].fix;
  // 4 sequences of full context do fit, and the report says so (the check ran).
  in.max_num_seqs = 4;
  const DoctorReport fits = run(tree, in);
  ASSERT_EQ(fits.findings.size(), 1u) << finding_list(fits);
  EXPECT_EQ(fits.findings[0].id, "capacity.model-fits");
  EXPECT_EQ(fits.findings[0].severity, Severity::kInfo);
  EXPECT_NE(fits.findings[0].summary.find("4 full-context sequences fit"), std::string::npos)
      << fits.findings[0].summary;
  EXPECT_NE(fits.findings[0].summary.find("weights "), std::string::npos);
  EXPECT_EQ(fits.exit_code(), 0);
}

TEST(DoctorCapacity, NotEvenOneSequenceIsAnErrorWithoutMaxNumSeqs1) {
  if (!std::filesystem::exists(default_model())) GTEST_SKIP() << "no default model";
  // ~90 MB of weights and ~189 MB per full-context sequence: 256 MiB x 0.90 = 230 MiB leaves
  // room for the weights but not for one sequence of 8192 tokens.
  FixtureTree tree(healthy_amd());
  tree.write("/sys/class/drm/card0/device/mem_info_vram_total", "268435456\n");
  DoctorInputs in = healthy_inputs();
  in.model_path = default_model();
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.id, "capacity.model-does-not-fit");
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.fix.find("--max-num-seqs"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("--max-model-len "), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("quantization"), std::string::npos) << f.fix;
  EXPECT_EQ(report.exit_code(), 1);
}

TEST(DoctorCapacity, WithoutAGpuMemorySizeTheCheckSaysItCouldNotRun) {
  if (!std::filesystem::exists(default_model())) GTEST_SKIP() << "no default model";
  FixtureTree tree(healthy_nvidia());
  DoctorInputs in = healthy_inputs();
  in.runtime_gpu_memory_bytes.reset();
  in.model_path = default_model();
  const DoctorReport report = run(tree, in);
  ASSERT_EQ(report.findings.size(), 1u) << finding_list(report);
  EXPECT_EQ(report.findings[0].id, "capacity.model-does-not-fit");
  EXPECT_EQ(report.findings[0].severity, Severity::kInfo);
}

TEST(DoctorCapacity, AnUnreadableModelIsAnError) {
  FixtureTree tree(healthy_nvidia());
  DoctorInputs in = healthy_inputs();
  in.model_path = tree.root() + "/missing.gguf";
  EXPECT_FALSE(run_doctor(tree.root(), in).ok());
}

TEST(DoctorJson, CarriesTheRankedFindings) {
  FixtureTree tree(healthy_amd());
  tree.remove("/dev/kfd");
  tree.write("/proc/sys/vm/swappiness", "60\n");
  const auto j = report_json(run(tree, healthy_inputs()));
  ASSERT_EQ(j["findings"].size(), 2u);
  EXPECT_EQ(j["findings"][0]["rank"], 1);
  EXPECT_EQ(j["findings"][0]["id"], "amd.kfd-missing");
  EXPECT_EQ(j["findings"][0]["severity"], "error");
  EXPECT_EQ(j["findings"][0]["evidence"][0]["file"], "/dev/kfd");
  EXPECT_EQ(j["findings"][0]["evidence"][0]["value"], "missing");
  EXPECT_EQ(j["counts"]["error"], 1);
  EXPECT_EQ(j["counts"]["info"], 1);
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["gpus"][0]["vendor"], "AMD");
}

}  // namespace
}  // namespace novaserve::doctor::testing
