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
