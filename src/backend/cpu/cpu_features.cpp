#include "backend/cpu/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace novaserve {
namespace {

bool detect_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // clang 14's __builtin_cpu_supports knows neither "f16c" nor "avxvnni", so those two bits are
  // read with CPUID directly (Intel SDM vol. 2A, CPUID leaf 1 ECX bit 29: F16C).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
#else
  return false;
#endif
}

bool detect_avxvnni() {
#if defined(__x86_64__) || defined(__i386__)
  // CPUID leaf 7 sub-leaf 1, EAX bit 4: AVX-VNNI (Intel SDM vol. 2A). Its instructions are
  // VEX-encoded, so the AVX2 check (which includes OS YMM-state support) must hold as well.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return detect_avx2() && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
#else
  return false;
#endif
}

bool env_forces_scalar() {
  const char* v = std::getenv("NOVASERVE_CPU_SCALAR");
  return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
}

// 0 = follow the environment, 1 = forced scalar, 2 = forced off (AVX2 if available).
std::atomic<int> g_force{0};
std::atomic<bool> g_no_vnni{false};

}  // namespace

bool cpu_has_avx2() {
  static const bool has = detect_avx2();
  return has;
}

bool cpu_use_avx2() {
  static const bool env_scalar = env_forces_scalar();
  const int force = g_force.load(std::memory_order_relaxed);
  const bool scalar = force == 0 ? env_scalar : force == 1;
  return !scalar && cpu_has_avx2();
}

bool cpu_use_avxvnni() {
  static const bool has = detect_avxvnni();
  return has && !g_no_vnni.load(std::memory_order_relaxed) && cpu_use_avx2();
}

void cpu_disable_avxvnni(bool disable) {
  g_no_vnni.store(disable, std::memory_order_relaxed);
}

void cpu_force_scalar(bool force) {
  g_force.store(force ? 1 : 2, std::memory_order_relaxed);
}

}  // namespace novaserve
