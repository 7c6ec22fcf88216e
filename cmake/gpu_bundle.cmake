# The GPU bundle: what a GPU machine without our build dependencies needs to
# run the whole GPU check (tools/gpu-check), in one flat folder.
#
#   cmake --install <build> --component gpu_bundle --prefix <folder> --strip
#
# tools/gpu-bundle makes one from a Release build; a ctest makes one from the
# test build and checks it (tests/gpu_bundle/check_bundle.sh).  The programs
# find each other's libraries through RUNPATH $ORIGIN; the non-system
# libraries they still need (libgomp, Google Benchmark's) are copied in.
# EXCLUDE_FROM_ALL keeps all of it out of a plain `cmake --install`.
set(CONVJIT_BUNDLE_TARGETS convjit_cli convjit convjit_gpu_tests convjit_bench bench_noop_kernel
                           dace_harness)
# convjit.jax's XLA FFI handler, where jaxlib's headers were found: the JAX
# tests on the GPU machine's jax.
if(TARGET convjit_xla_ffi)
  list(APPEND CONVJIT_BUNDLE_TARGETS convjit_xla_ffi)
endif()
# BUILD_RPATH too: install can only rewrite a RUNPATH the build left room for,
# and programs needing nothing but system libraries would get none.
set_target_properties(${CONVJIT_BUNDLE_TARGETS} PROPERTIES BUILD_RPATH "$ORIGIN" INSTALL_RPATH "$ORIGIN")
install(TARGETS ${CONVJIT_BUNDLE_TARGETS}
        RUNTIME_DEPENDENCY_SET convjit_gpu_bundle_dependencies
        RUNTIME DESTINATION . COMPONENT gpu_bundle EXCLUDE_FROM_ALL
        LIBRARY DESTINATION . COMPONENT gpu_bundle EXCLUDE_FROM_ALL)
# glibc and the C++ runtime come from the machine; everything else travels.
# The DaCe shims `convjit export --dace` copies (lbann/dace_shim.cpp), beside
# libconvjit.so.0 where the export looks for them.  They are templates, not
# loaded as they are: their RUNPATH is a placeholder each copy replaces.
install(TARGETS convjit_dace_host convjit_dace_cuda
        LIBRARY DESTINATION . COMPONENT gpu_bundle EXCLUDE_FROM_ALL)
install(RUNTIME_DEPENDENCY_SET convjit_gpu_bundle_dependencies
        PRE_EXCLUDE_REGEXES
          [[^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so]] [[^ld-linux]]
          [[^linux-vdso]]
        DESTINATION . COMPONENT gpu_bundle EXCLUDE_FROM_ALL)
