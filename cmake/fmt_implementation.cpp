// fmt's compiled part, built once into the static convjit_fmt library
// (cmake/fmt_compiled_once.cmake).
//
// Why not Debian's libfmt.so: convjit's library and CLI must load on a GPU
// machine that has none of our Debian packages, so nothing may need it at
// run time.  Why not FMT_HEADER_ONLY: it compiles fmt's implementation into
// every translation unit that includes <fmt/format.h>, which made each of
// them four times slower to build (ten seconds more apiece under the
// sanitizers).  Debian ships no static libfmt, so this file is what fmt's own
// src/format.cc is: the implementation header, and the instantiations that
// <fmt/format.h> declares extern.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view,
                                 basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
