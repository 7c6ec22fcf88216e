# Embeds kernel_templates/**/*.cuh into a C++ source, with a SHA-256 over all
# of them that goes into every JIT cache key.  Each is named by its path
# below kernel_templates/ ("conv/conv_fwd.cuh"), the name templates include
# it by.
#   cmake -DSOURCE_DIR=<dir> -DOUTPUT=<file.cpp> -P embed_templates.cmake
file(GLOB_RECURSE templates RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/*.cuh)
list(SORT templates)
set(entries "")
set(all_text "")
foreach(name IN LISTS templates)
  file(READ ${SOURCE_DIR}/${name} text)
  string(FIND "${text}" ")CJT\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${name} contains the raw-string delimiter )CJT\"")
  endif()
  string(APPEND entries "    {\"${name}\", R\"CJT(${text})CJT\"},\n")
  string(APPEND all_text "${name}\n${text}\n")
endforeach()
string(SHA256 hash "${all_text}")
list(LENGTH templates count)
file(WRITE ${OUTPUT}.tmp
"// Generated from kernel_templates/ by cmake/embed_templates.cmake. Do not edit.
#include \"dispatcher/backends/jit/embedded_templates.hpp\"

namespace convjit {

namespace {
const EmbeddedTemplate kTemplates[${count}] = {
${entries}};
}  // namespace

std::span<const EmbeddedTemplate> embedded_templates() { return kTemplates; }
std::string_view embedded_templates_hash() { return \"${hash}\"; }

}  // namespace convjit
")
# Only touch the output when it changed, so unchanged templates rebuild nothing.
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
