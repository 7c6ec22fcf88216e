# convjit_fmt: fmt's headers with its implementation compiled once into a
# static, position-independent library (cmake/fmt_implementation.cpp says why
# neither Debian's libfmt.so nor FMT_HEADER_ONLY).  Link it wherever
# fmt::fmt-header-only was linked; spdlog's header-only target is pointed at
# it too.
find_package(fmt REQUIRED)
add_library(convjit_fmt STATIC ${CMAKE_CURRENT_LIST_DIR}/fmt_implementation.cpp)
target_include_directories(convjit_fmt PUBLIC
  $<TARGET_PROPERTY:fmt::fmt-header-only,INTERFACE_INCLUDE_DIRECTORIES>)
set_target_properties(convjit_fmt PROPERTIES POSITION_INDEPENDENT_CODE ON
                                             CXX_VISIBILITY_PRESET hidden
                                             VISIBILITY_INLINES_HIDDEN ON)
