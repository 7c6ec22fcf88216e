# CONVJIT_SANITIZE=ON: every target of the build (library, CLI, tests, the
# test libraries it dlopens) is compiled with AddressSanitizer and
# UndefinedBehaviorSanitizer.  Any finding ends the process with an error
# (-fno-sanitize-recover), so a test that triggers one fails.
#
# The emulator runs a block's threads on Boost.Context fibers.  ASan must be
# told of every stack switch, or it takes the fiber stacks for overflows:
# Boost's ucontext fibers announce their switches under BOOST_USE_ASAN (its
# default fcontext ones do not).
option(CONVJIT_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(CONVJIT_SANITIZE)
  set(CONVJIT_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
                             -fno-omit-frame-pointer)
  # GCC's flow analysis sees through the sanitizers' checks poorly and
  # warns of uninitialised values in libstdc++'s own headers (<regex>);
  # the release build keeps the warning.
  add_compile_options(${CONVJIT_SANITIZE_FLAGS} -Wno-maybe-uninitialized)
  add_link_options(${CONVJIT_SANITIZE_FLAGS})
  add_compile_definitions(CONVJIT_SANITIZE BOOST_USE_ASAN BOOST_USE_UCONTEXT)
  message(STATUS "convjit: building with ASan and UBSan")
endif()
