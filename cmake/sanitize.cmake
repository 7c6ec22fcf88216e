# CONVJIT_SANITIZE=ON: every target of the build (library, CLI, tests, the
# test libraries they dlopen) is compiled with AddressSanitizer and
# UndefinedBehaviorSanitizer.  Any finding ends the process with an error
# (-fno-sanitize-recover), so a test that triggers one fails.  The
# emulator's fiber switches are announced to ASan in
# dispatcher/backends/emulator/stack_switch_annotations.hpp.
option(CONVJIT_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(CONVJIT_SANITIZE)
  set(CONVJIT_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
                             -fno-omit-frame-pointer)
  # GCC's flow analysis sees through the sanitizers' checks poorly and
  # warns of uninitialised values in libstdc++'s own headers (<regex>);
  # the release build keeps the warning.
  add_compile_options(${CONVJIT_SANITIZE_FLAGS} -Wno-maybe-uninitialized)
  add_link_options(${CONVJIT_SANITIZE_FLAGS})
  message(STATUS "convjit: building with ASan and UBSan")
endif()

# convjit_sanitize_unoptimised(<target>): under the sanitizers, the target's
# own C++ sources (not those the build generates) compile at -O0.  For the
# CLI's and the tests' code, which calls the library and spends little time
# of its own, that keeps every check and cuts the instrumented compile
# three-fold (CLI11's header-only code in each command: 47 s a file at -O1,
# 17 s at -O0), where most of the sanitizer pass's build time went.  The
# library, its emulated kernels and the test templates stay at -O1: the
# generated sources get it back as their own option, which comes last on
# the command line (an option on the target's own sources instead would
# keep them out of its unity batches, cmake/unity_build.cmake).
function(convjit_sanitize_unoptimised target)
  if(NOT CONVJIT_SANITIZE)
    return()
  endif()
  target_compile_options(${target} PRIVATE -O0)
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "^${CMAKE_BINARY_DIR}/.*\\.cpp$")
  if(sources)
    set_source_files_properties(${sources} PROPERTIES COMPILE_OPTIONS -O1)
  endif()
endfunction()
