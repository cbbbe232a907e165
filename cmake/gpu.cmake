# GPU backends: one source (src/backend/gpu/*/*.cu, src/runtime/gpu/*.cu) for CUDA (nvcc) and HIP
# (hipcc). Included from the top-level CMakeLists.txt after the layers are defined. Both options are
# off by default, so the CPU build and CI never need a GPU toolchain.
#
#   NOVASERVE_CUDA  novaserve_gpu_kernels (backend layer: kernels and dispatch, cuBLAS) and
#                   novaserve_gpu (runtime layer: device state, the GPU runner), static libs linked
#                   into the novaserve binary (--device cuda), + gpu_op_test (all tests/gpu/*.cu); arch from
#                   CMAKE_CUDA_ARCHITECTURES (default 90a: H100/H200 with Hopper's own
#                   instructions; an arch list with 90a defines NOVASERVE_GPU_SM90A, which enables
#                   the wgmma GEMM's host side).
#   NOVASERVE_HIP   novaserve_gpu_kernels_hip + novaserve_gpu_hip (the same two layers, linked into
#                   novaserve for --device hip) +
#                   gpu_op_test_hip, compiled by calling hipcc
#                   directly: CMake 3.25's LANGUAGE HIP does not find Debian's hip-lang config.
#                   Arch list from NOVASERVE_HIP_ARCHS (default gfx90a: MI200). gpu_blas.cu is
#                   left out because hipBLAS is not packaged in Debian bookworm.
#
# tools/check_gpu_compile.sh is the fast compile-only check that `make test` runs; it does not
# need these options.

option(NOVASERVE_CUDA "Build the CUDA backend and its op tests (needs nvcc)" OFF)
option(NOVASERVE_HIP "Build the HIP backend and its op tests (needs hipcc)" OFF)
set(NOVASERVE_HIP_ARCHS "gfx90a" CACHE STRING "Semicolon-separated --offload-arch list for HIP")

# Two GPU libraries, as the layers (CMakeLists.txt): the backend's kernels and dispatch, and the
# runtime (per-device state and the GPU runner) above the model.
file(GLOB NOVASERVE_GPU_BACKEND_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/src/backend/gpu/platform/*.cu ${CMAKE_SOURCE_DIR}/src/backend/gpu/kernels/*.cu
  ${CMAKE_SOURCE_DIR}/src/backend/gpu/dispatch/*.cu)
file(GLOB NOVASERVE_GPU_RUNTIME_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/runtime/gpu/*.cu)
# Every tests/gpu/*.cu goes into the one GPU test binary (op tests, attention, weight arena).
file(GLOB NOVASERVE_GPU_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/*.cu)
set(NOVASERVE_GPU_WARNINGS -Wall -Wextra -Wno-unused-parameter)

if(NOVASERVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90a)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    # CMake 3.25 does not know nvcc's C++20 flag (nvcc accepts it since CUDA 12).
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()

  # The top-level add_compile_options() are GCC flags that nvcc rejects: pass them to the host
  # compiler instead.
  string(REPLACE ";" "," _novaserve_xcompiler "${NOVASERVE_GPU_WARNINGS}")
  function(novaserve_cuda_target target)
    set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS "")
    set_target_properties(${target} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON
                                               CUDA_EXTENSIONS OFF)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${_novaserve_xcompiler}>
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endfunction()

  add_library(novaserve_gpu_kernels STATIC ${NOVASERVE_GPU_BACKEND_SOURCES})
  novaserve_cuda_target(novaserve_gpu_kernels)
  target_compile_definitions(novaserve_gpu_kernels PUBLIC NOVASERVE_GPU_HAS_BLAS=1)
  if("90a" IN_LIST CMAKE_CUDA_ARCHITECTURES)
    # The kernels' sm_90a-only code (wgmma) exists in this build: its host side may plan for it.
    target_compile_definitions(novaserve_gpu_kernels PRIVATE NOVASERVE_GPU_SM90A=1)
  endif()
  target_link_libraries(novaserve_gpu_kernels PUBLIC novaserve_backend_gpu CUDA::cudart_static
                        CUDA::cublas)
  add_library(novaserve_gpu STATIC ${NOVASERVE_GPU_RUNTIME_SOURCES})
  novaserve_cuda_target(novaserve_gpu)
  target_link_libraries(novaserve_gpu PUBLIC novaserve_runtime novaserve_gpu_kernels)
  # The CLI's --device cuda (src/cli/device_flags.cpp).
  target_link_libraries(novaserve PRIVATE novaserve_gpu)
  target_compile_definitions(novaserve PRIVATE NOVASERVE_WITH_GPU=1)

  if(NOVASERVE_TESTS)
    find_package(GTest REQUIRED)
    add_executable(gpu_op_test ${NOVASERVE_GPU_TEST_SOURCES})
    novaserve_cuda_target(gpu_op_test)
    target_link_libraries(gpu_op_test PRIVATE novaserve_gpu novaserve_tools GTest::gtest
                          GTest::gtest_main)
    # Drop shared libraries the test does not use (PCRE2 via novaserve_tokenizer), so the binary can
    # be carried to GPU machines that lack them.
    target_link_options(gpu_op_test PRIVATE -Wl,--as-needed)
    add_test(NAME gpu.op_test COMMAND gpu_op_test)
  endif()
endif()

if(NOVASERVE_HIP)
  find_program(NOVASERVE_HIPCC hipcc REQUIRED)
  find_library(NOVASERVE_AMDHIP64 amdhip64 REQUIRED)
  # -ffp-contract=off: HIP's __fmul_rn/__fadd_rn are plain operators, and hipcc fuses a*b+c by
  # default; the kernels' bit-exact decode (weight_decode.h) needs the roundings kept.
  set(_novaserve_hip_flags -std=c++20 -O3 -fPIC -ffp-contract=off -I${CMAKE_SOURCE_DIR}/src
      ${NOVASERVE_GPU_WARNINGS})
  foreach(arch ${NOVASERVE_HIP_ARCHS})
    list(APPEND _novaserve_hip_flags --offload-arch=${arch})
  endforeach()

  # One archive per GPU layer, as for CUDA.
  function(novaserve_hip_library target)
    set(objects "")
    foreach(src ${ARGN})
      get_filename_component(name ${src} NAME_WE)
      if(name STREQUAL "gpu_blas")
        continue()  # hipBLAS is not in Debian bookworm
      endif()
      set(obj ${CMAKE_BINARY_DIR}/hip/${name}.o)
      add_custom_command(
        OUTPUT ${obj}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/hip
        COMMAND ${NOVASERVE_HIPCC} -x hip ${_novaserve_hip_flags} -MD -MF ${obj}.d -c ${src} -o ${obj}
        DEPENDS ${src}
        DEPFILE ${obj}.d
        COMMENT "hipcc ${name}.cu"
        VERBATIM)
      list(APPEND objects ${obj})
    endforeach()
    add_library(${target} STATIC ${objects})
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
  endfunction()
  novaserve_hip_library(novaserve_gpu_kernels_hip ${NOVASERVE_GPU_BACKEND_SOURCES})
  target_link_libraries(novaserve_gpu_kernels_hip PUBLIC novaserve_backend_gpu ${NOVASERVE_AMDHIP64})
  novaserve_hip_library(novaserve_gpu_hip ${NOVASERVE_GPU_RUNTIME_SOURCES})
  target_link_libraries(novaserve_gpu_hip PUBLIC novaserve_runtime novaserve_gpu_kernels_hip)
  # The CLI's --device hip (src/cli/device_flags.cpp).
  target_link_libraries(novaserve PRIVATE novaserve_gpu_hip)
  target_compile_definitions(novaserve PRIVATE NOVASERVE_WITH_GPU=1)

  if(NOVASERVE_TESTS)
    find_package(GTest REQUIRED)
    # The test files are host code only (their kernels are in the library). clang 15's HIP mode
    # crashes on GoogleTest's headers in C++20, so they are compiled as plain C++ with HIP headers.
    set(_novaserve_hip_test_objects "")
    foreach(src ${NOVASERVE_GPU_TEST_SOURCES})
      get_filename_component(name ${src} NAME_WE)
      set(test_obj ${CMAKE_BINARY_DIR}/hip/test_${name}.o)
      add_custom_command(
        OUTPUT ${test_obj}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/hip
        COMMAND ${NOVASERVE_HIPCC} -x c++ -D__HIP_PLATFORM_AMD__ -DNOVASERVE_GPU_HIP=1
                ${_novaserve_hip_flags} -MD -MF ${test_obj}.d -c ${src} -o ${test_obj}
        DEPENDS ${src}
        DEPFILE ${test_obj}.d
        COMMENT "hipcc ${name}.cu (host)"
        VERBATIM)
      list(APPEND _novaserve_hip_test_objects ${test_obj})
    endforeach()
    add_executable(gpu_op_test_hip ${_novaserve_hip_test_objects})
    set_target_properties(gpu_op_test_hip PROPERTIES LINKER_LANGUAGE CXX)
    target_link_libraries(gpu_op_test_hip PRIVATE novaserve_gpu_hip novaserve_tools GTest::gtest
                          GTest::gtest_main)
    add_test(NAME gpu.op_test_hip COMMAND gpu_op_test_hip)
  endif()
endif()
