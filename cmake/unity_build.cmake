# convjit_unity_build(<target>): the target's own sources compile in batches
# of eight, each batch one translation unit.  Most of a file's compile time
# here is the header-only libraries' inline code (CLI11, nlohmann_json,
# spdlog, fmt's templates) that each file instantiates and optimises again:
# a CLI command took 17 s alone, the 27 of them 72 s as one unit.  That
# time is most of CI's two builds (plain and sanitized).
#
# The sources the build generates (the kernel templates compiled for the
# emulator, build/emulated_*) stay one unit each: they include the same
# template headers under other namespaces.  A batch shares its anonymous
# namespaces, so a file-local name must be unique within its target.
function(convjit_unity_build target)
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "^${CMAKE_BINARY_DIR}/")
  if(sources)
    set_source_files_properties(${sources} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH
                                             UNITY_BUILD_BATCH_SIZE 8)
endfunction()
