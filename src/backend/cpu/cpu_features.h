// Runtime choice between the AVX2 and the portable scalar CPU kernels.
#pragma once

namespace novaserve {

/// True when the CPU supports AVX2, FMA and F16C (x86-64-v3 level) and scalar kernels are not
/// forced. The binary itself is built for baseline x86-64; AVX2 code lives in functions with
/// __attribute__((target(...))) and is only called when this returns true.
/// The environment variable NOVASERVE_CPU_SCALAR=1 (read once) forces the scalar kernels.
bool cpu_use_avx2();

/// True when the hardware has AVX2+FMA+F16C, regardless of forcing.
bool cpu_has_avx2();

/// True when cpu_use_avx2() and the CPU also has AVX-VNNI (VEX-encoded vpdpbusd) and it is not
/// disabled. The VNNI kernels give bitwise the same results as the plain AVX2 ones.
bool cpu_use_avxvnni();

/// Disables (true) or re-enables (false) the AVX-VNNI kernels, e.g. to test them against AVX2.
void cpu_disable_avxvnni(bool disable);

/// Forces (true) or unforces (false) the scalar kernels for this process, overriding the
/// environment variable. Thread-safe; takes effect at the next kernel dispatch.
void cpu_force_scalar(bool force);

}  // namespace novaserve
