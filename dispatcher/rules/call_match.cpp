#include "dispatcher/rules/call_match.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "dispatcher/descriptor/dtype.hpp"

namespace convjit::rules {

namespace {

enum class FieldType { word, integer, per_dim, flag, version, arch, name };

// Which op kinds a field applies to (bits of 1 << OpKind).
constexpr unsigned kAll = 0x1f;
constexpr unsigned kConv = 1u << static_cast<int>(OpKind::conv);
constexpr unsigned kPool = 1u << static_cast<int>(OpKind::pool);
constexpr unsigned kWindowed = kConv | kPool;

struct Field {
  std::string_view name;
  FieldType type;
  unsigned kinds;
  std::vector<std::string_view> words;  // a word field's values
};

const std::vector<Field>& fields() {
  static const std::vector<Field> all = {
      {"op", FieldType::word, kAll, {"conv", "pool", "bias_grad", "batchnorm", "resize"}},
      {"dir", FieldType::word, kAll, {"fwd", "bwddata", "bwdfilt", "bwd"}},
      {"pool", FieldType::word, kPool, {"max", "avg", "avg-include-pad"}},
      {"dims", FieldType::integer, kAll, {}},
      {"dtype", FieldType::word, kAll, {"f32", "f16", "bf16", "f64"}},
      {"layout", FieldType::word, kAll, {"nchw", "nhwc", "other"}},
      {"n", FieldType::integer, kAll, {}},
      {"c", FieldType::integer, kAll, {}},
      {"k", FieldType::integer, kConv, {}},
      {"groups", FieldType::integer, kConv, {}},
      {"spatial", FieldType::per_dim, kAll, {}},
      {"filter", FieldType::per_dim, kWindowed, {}},
      {"stride", FieldType::per_dim, kWindowed, {}},
      {"pad_begin", FieldType::per_dim, kWindowed, {}},
      {"pad_end", FieldType::per_dim, kWindowed, {}},
      {"dilation", FieldType::per_dim, kWindowed, {}},
      {"depthwise", FieldType::flag, kConv, {}},
      {"pointwise", FieldType::flag, kConv, {}},
      {"strided", FieldType::flag, kWindowed, {}},
      {"dilated", FieldType::flag, kWindowed, {}},
      {"fused", FieldType::flag, kConv, {}},
      {"device", FieldType::word, kAll, {"host", "cuda"}},
      {"arch", FieldType::arch, kAll, {}},
      {"cudnn", FieldType::version, kAll, {}},
      {"onednn", FieldType::version, kAll, {}},
      {"nvrtc", FieldType::version, kAll, {}},
      {"name", FieldType::name, kAll, {}},
  };
  return all;
}

const Field* find_field(std::string_view name) {
  for (const Field& f : fields())
    if (f.name == name) return &f;
  return nullptr;
}

std::string kinds_text(unsigned kinds) {
  std::string text;
  for (int k = 0; k < 5; ++k)
    if ((kinds & (1u << k)) != 0)
      text +=
          fmt::format("{}{}", text.empty() ? "" : " and ", op_kind_name(static_cast<OpKind>(k)));
  return text;
}

// ---- the call's value of a field ---------------------------------------------------------

// The tensor whose N, C and spatial sizes the fields name: x, or a bias gradient's dy.
const Dims5& activation_dims(const OpDescriptor& d) {
  return d.kind == OpKind::bias_grad ? d.y_dims : d.x_dims;
}

std::string layout_of(const OpDescriptor& d) {
  const Dims5& dims = activation_dims(d);
  const Dims5& strides = d.kind == OpKind::bias_grad ? d.y_strides : d.x_strides;
  const int rank = d.rank();
  if (strides == contiguous_strides(dims, rank, false)) return "nchw";
  if (strides == contiguous_strides(dims, rank, true)) return "nhwc";
  return "other";
}

std::vector<std::int64_t> per_dim_values(const OpDescriptor& d, std::string_view field) {
  std::vector<std::int64_t> values;
  for (int i = 0; i < d.spatial_dims; ++i) {
    const auto s = static_cast<std::size_t>(i);
    if (field == "spatial") values.push_back(activation_dims(d)[2 + s]);
    if (field == "filter") values.push_back(d.is_conv() ? d.w_dims[2 + s] : d.window[s]);
    if (field == "stride") values.push_back(d.stride[s]);
    if (field == "pad_begin") values.push_back(d.pad_begin[s]);
    if (field == "pad_end") values.push_back(d.pad_end[s]);
    if (field == "dilation") values.push_back(d.dilation[s]);
  }
  return values;
}

bool any_above_one(const std::vector<std::int64_t>& values) {
  return std::any_of(values.begin(), values.end(), [](std::int64_t v) { return v > 1; });
}

// The call's value of a scalar field; nullopt where the call has none (a
// library not loaded, a field of another op kind).
std::optional<Scalar> value_of(const CallFacts& call, const Field& field) {
  const OpDescriptor& d = call.desc;
  const std::string_view name = field.name;
  if ((field.kinds & (1u << static_cast<int>(d.kind))) == 0) return std::nullopt;
  if (name == "op") return std::string(op_kind_name(d.kind));
  if (name == "dir") return std::string(direction_name(d.direction));
  if (name == "pool") return std::string(pool_mode_name(d.pool_mode));
  if (name == "dims") return std::int64_t{d.spatial_dims};
  if (name == "dtype") return std::string(dtype_name(d.dtype));
  if (name == "layout") return layout_of(d);
  if (name == "n") return activation_dims(d)[0];
  if (name == "c") return activation_dims(d)[1];
  if (name == "k") return d.y_dims[1];
  if (name == "groups") return d.groups;
  if (name == "depthwise") return d.groups > 1 && d.w_dims[1] == 1;
  if (name == "pointwise") {
    const auto f = per_dim_values(d, "filter");
    return std::all_of(f.begin(), f.end(), [](std::int64_t v) { return v == 1; });
  }
  if (name == "strided") return any_above_one(per_dim_values(d, "stride"));
  if (name == "dilated") return any_above_one(per_dim_values(d, "dilation"));
  if (name == "fused") return d.has_epilogue();
  if (name == "device")
    return std::string(call.device.kind == CONVJIT_DEVICE_CUDA ? "cuda" : "host");
  if (name == "name") return call.name;
  const std::optional<Version>* version = name == "cudnn"    ? &call.cudnn
                                          : name == "onednn" ? &call.onednn
                                          : name == "nvrtc"  ? &call.nvrtc
                                                             : nullptr;
  if (version != nullptr) {
    if (!version->has_value()) return std::nullopt;
    std::string text;
    for (int part : **version) text += fmt::format("{}{}", text.empty() ? "" : ".", part);
    return text;
  }
  if (name == "arch" && !call.arch.empty()) return call.arch;
  return std::nullopt;
}

// ---- comparing -------------------------------------------------------------------------------

// sm_90a -> 90
std::optional<std::int64_t> arch_number(std::string_view arch) {
  if (!arch.starts_with("sm_")) return std::nullopt;
  std::int64_t number = 0;
  const char* end = arch.data() + arch.size();
  const auto [at, error] = std::from_chars(arch.data() + 3, end, number);
  if (error != std::errc() || at == arch.data() + 3 ||
      (at != end && std::string_view(at, end) != "a"))
    return std::nullopt;
  return number;
}

// A word pattern's tokens (split at '_') against the name's: "*" stands for
// any number of whole tokens; every other token matches exactly one.
bool glob_matches(std::string_view pattern, std::string_view name) {
  const auto split = [](std::string_view text) {
    std::vector<std::string_view> tokens;
    std::size_t start = 0;
    for (std::size_t at = 0; at <= text.size(); ++at)
      if (at == text.size() || text[at] == '_') {
        tokens.push_back(text.substr(start, at - start));
        start = at + 1;
      }
    return tokens;
  };
  const auto p = split(pattern), n = split(name);
  // matched[i][j]: pattern tokens [i, end) match name tokens [j, end).
  std::vector<std::vector<char>> matched(p.size() + 1, std::vector<char>(n.size() + 1, 0));
  matched[p.size()][n.size()] = 1;
  for (std::size_t i = p.size(); i-- > 0;)
    for (std::size_t j = n.size() + 1; j-- > 0;)
      matched[i][j] = p[i] == "*" ? (matched[i + 1][j] || (j < n.size() && matched[i][j + 1]))
                                  : (j < n.size() && p[i] == n[j] && matched[i + 1][j + 1]);
  return matched[0][0] != 0;
}

int compare_versions(std::string_view a, std::string_view b) {
  const auto va = parse_version(a), vb = parse_version(b);
  if (!va || !vb) return a < b ? -1 : a > b ? 1 : 0;
  // A bound names as many parts as it cares about: max "9.3" holds 9.3.2.
  const std::size_t parts = std::min(va->size(), vb->size());
  for (std::size_t i = 0; i < parts; ++i)
    if ((*va)[i] != (*vb)[i]) return (*va)[i] < (*vb)[i] ? -1 : 1;
  return 0;
}

// <0, 0, >0 as `value` is below, at or above `bound`, for a field of `type`.
int compare(FieldType type, const Scalar& value, const Scalar& bound) {
  if (type == FieldType::version)
    return compare_versions(std::get<std::string>(value), std::get<std::string>(bound));
  if (type == FieldType::arch) {
    const auto a = arch_number(std::get<std::string>(value));
    const auto b = arch_number(std::get<std::string>(bound));
    return a && b ? (*a < *b ? -1 : *a > *b ? 1 : 0) : -2;
  }
  const std::int64_t a = std::get<std::int64_t>(value), b = std::get<std::int64_t>(bound);
  return a < b ? -1 : a > b ? 1 : 0;
}

bool equal(FieldType type, const Scalar& value, const Scalar& wanted) {
  if (type == FieldType::name)
    return glob_matches(std::get<std::string>(wanted), std::get<std::string>(value));
  if (type == FieldType::version) return compare(type, value, wanted) == 0;
  return value == wanted;
}

bool holds(FieldType type, const ValueSpec& spec, const Scalar& value) {
  bool ok = true;
  switch (spec.kind) {
    case ValueSpec::Kind::any:
      break;
    case ValueSpec::Kind::exact:
    case ValueSpec::Kind::in:
      ok = std::any_of(spec.values.begin(), spec.values.end(),
                       [&](const Scalar& wanted) { return equal(type, value, wanted); });
      break;
    case ValueSpec::Kind::range: {
      const int low = spec.min ? compare(type, value, *spec.min) : 0;
      const int high = spec.max ? compare(type, value, *spec.max) : 0;
      ok = low >= 0 && high <= 0 && low != -2 && high != -2;
      break;
    }
  }
  return ok != spec.negate;
}

bool test_holds(const CallFacts& call, const FieldTest& test) {
  const Field& field = *find_field(test.field);
  if ((field.kinds & (1u << static_cast<int>(call.desc.kind))) == 0) return false;
  if (field.type != FieldType::per_dim) {
    const auto value = value_of(call, field);
    return value.has_value() ? holds(field.type, test.spec, *value) : test.spec.negate;
  }
  const auto values = per_dim_values(call.desc, field.name);
  if (!test.per_dim.empty() && test.per_dim.size() != values.size()) return false;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!holds(FieldType::integer, test.per_dim.empty() ? test.spec : test.per_dim[i],
               Scalar{values[i]}))
      return false;
  return true;
}

// ---- parsing a "match" object ---------------------------------------------------------------

std::string type_wants(const Field& f) {
  switch (f.type) {
    case FieldType::word: {
      std::string words;
      for (std::string_view w : f.words)
        words += fmt::format("{}\"{}\"", words.empty() ? "" : ", ", w);
      return "one of " + words;
    }
    case FieldType::integer:
      return "an integer";
    case FieldType::per_dim:
      return "an integer for every spatial dim, or an array of one per dim";
    case FieldType::flag:
      return "true or false";
    case FieldType::version:
      return "a version such as \"9.1\"";
    case FieldType::arch:
      return "an architecture such as \"sm_90\"";
    case FieldType::name:
      return "a descriptor name pattern such as \"conv2d_*_bwdfilt\"";
  }
  return "";
}

Result<Scalar> scalar_from(const nlohmann::json& j, const Field& f, std::string_view where) {
  const auto bad = [&] {
    return Status::invalid(
        fmt::format("{}: match key '{}' = {} is not {}", where, f.name, j.dump(), type_wants(f)));
  };
  switch (f.type) {
    case FieldType::integer:
    case FieldType::per_dim:
      if (!j.is_number_integer()) return bad();
      return Scalar{j.get<std::int64_t>()};
    case FieldType::flag:
      if (!j.is_boolean()) return bad();
      return Scalar{j.get<bool>()};
    default:
      break;
  }
  if (!j.is_string()) return bad();
  const auto text = j.get<std::string>();
  const bool known = f.type == FieldType::word
                         ? std::find(f.words.begin(), f.words.end(), text) != f.words.end()
                     : f.type == FieldType::version ? parse_version(text).has_value()
                     : f.type == FieldType::arch    ? arch_number(text).has_value()
                                                    : !text.empty();
  if (!known) return bad();
  return Scalar{text};
}

Result<ValueSpec> spec_from(const nlohmann::json& j, const Field& f, std::string_view where) {
  ValueSpec spec;
  if (j.is_string() && j.get<std::string>() == "*") return spec;
  if (!j.is_object()) {
    auto value = scalar_from(j, f, where);
    if (!value.is_ok()) return value.status();
    spec.kind = ValueSpec::Kind::exact;
    spec.values.push_back(std::move(value).value());
    return spec;
  }
  const bool ranged = f.type == FieldType::integer || f.type == FieldType::per_dim ||
                      f.type == FieldType::version || f.type == FieldType::arch;
  for (const auto& [key, value] : j.items()) {
    if (key == "in" && value.is_array() && !value.empty()) {
      spec.kind = ValueSpec::Kind::in;
      for (const auto& item : value) {
        auto v = scalar_from(item, f, where);
        if (!v.is_ok()) return v.status();
        spec.values.push_back(std::move(v).value());
      }
    } else if ((key == "min" || key == "max") && ranged) {
      auto v = scalar_from(value, f, where);
      if (!v.is_ok()) return v.status();
      spec.kind = ValueSpec::Kind::range;
      (key == "min" ? spec.min : spec.max) = std::move(v).value();
    } else {
      return Status::invalid(fmt::format(
          "{}: match key '{}' has '{}'; a value is \"*\", {}, {{\"in\": [...]}}{}", where, f.name,
          key, type_wants(f), ranged ? " or {\"min\": lo, \"max\": hi}" : ""));
    }
  }
  if (spec.kind == ValueSpec::Kind::range && spec.min && spec.max &&
      compare(f.type, *spec.min, *spec.max) > 0)
    return Status::invalid(fmt::format("{}: match key '{}' has min {} above max {}", where, f.name,
                                       j["min"].dump(), j["max"].dump()));
  return spec;
}

std::string spec_text(const ValueSpec& spec) {
  const auto text = [](const Scalar& v) {
    return std::visit(
        [](const auto& x) -> std::string {
          if constexpr (std::is_same_v<std::decay_t<decltype(x)>, bool>)
            return x ? "true" : "false";
          else
            return fmt::format("{}", x);
        },
        v);
  };
  switch (spec.kind) {
    case ValueSpec::Kind::any:
      return "=*";
    case ValueSpec::Kind::exact:
      return (spec.negate ? "!=" : "=") + text(spec.values[0]);
    case ValueSpec::Kind::in: {
      std::string all;
      for (const Scalar& v : spec.values) all += (all.empty() ? "" : ",") + text(v);
      return (spec.negate ? " not in {" : " in {") + all + "}";
    }
    case ValueSpec::Kind::range:
      return fmt::format("{}{}{}", spec.min ? " >= " + text(*spec.min) : "",
                         spec.min && spec.max ? " and" : "",
                         spec.max ? " <= " + text(*spec.max) : "");
  }
  return "";
}

// ---- parsing a query -------------------------------------------------------------------------

class QueryReader {
 public:
  QueryReader(std::string_view text, std::string_view where) : text_(text), where_(where) {}

  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool done() {
    skip_space();
    return at_ == text_.size();
  }
  bool take(std::string_view token) {
    skip_space();
    if (text_.substr(at_, token.size()) != token) return false;
    at_ += token.size();
    return true;
  }
  std::string word() {
    skip_space();
    const std::size_t start = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) ||
                                  text_[at_] == '_' || text_[at_] == '-' || text_[at_] == '.'))
      ++at_;
    return std::string(text_.substr(start, at_ - start));
  }
  // An integer, a quoted string, true or false, as JSON.
  std::optional<nlohmann::json> value() {
    skip_space();
    if (at_ < text_.size() && text_[at_] == '"') {
      const std::size_t end = text_.find('"', at_ + 1);
      if (end == std::string_view::npos) return std::nullopt;
      std::string quoted(text_.substr(at_ + 1, end - at_ - 1));
      at_ = end + 1;
      return nlohmann::json(quoted);
    }
    const std::string w = word();
    if (w == "true" || w == "false") return nlohmann::json(w == "true");
    std::int64_t number = 0;
    const auto [end, error] = std::from_chars(w.data(), w.data() + w.size(), number);
    if (w.empty() || error != std::errc() || end != w.data() + w.size()) return std::nullopt;
    return nlohmann::json(number);
  }
  Status error(std::string_view what) const {
    return Status::invalid(
        fmt::format("{}: query \"{}\" at offset {}: {}", where_, text_, at_, what));
  }

 private:
  std::string_view text_;
  std::string_view where_;
  std::size_t at_ = 0;
};

// The head (conv2d, maxpool, *) as tests of op, pool and dims.
Status read_head(QueryReader& r, std::vector<FieldTest>& tests) {
  if (r.take("*")) return Status::ok();
  std::string head = r.word();
  std::optional<std::int64_t> dims;
  if (head.size() > 2 && head.back() == 'd' && head[head.size() - 2] >= '1' &&
      head[head.size() - 2] <= '3') {
    dims = head[head.size() - 2] - '0';
    head.resize(head.size() - 2);
  }
  const auto exact = [](std::string field, Scalar value) {
    ValueSpec spec;
    spec.kind = ValueSpec::Kind::exact;
    spec.values.push_back(std::move(value));
    return FieldTest{std::move(field), std::move(spec), {}};
  };
  if (head == "maxpool" || head == "avgpool") {
    tests.push_back(exact("op", std::string("pool")));
    FieldTest mode = exact("pool", std::string("max"));
    if (head == "avgpool") {
      mode.spec.kind = ValueSpec::Kind::in;
      mode.spec.values = {std::string("avg"), std::string("avg-include-pad")};
    }
    tests.push_back(std::move(mode));
  } else if (head == "conv" || head == "pool" || head == "bias_grad" || head == "batchnorm" ||
             head == "resize") {
    tests.push_back(exact("op", head));
  } else {
    return r.error(
        fmt::format("'{}' names no op: start with conv, pool, maxpool, avgpool, "
                    "bias_grad, batchnorm, resize (optionally 1d, 2d or 3d) or *",
                    head));
  }
  if (dims) tests.push_back(exact("dims", *dims));
  return Status::ok();
}

// One [@field op value], `op` one of = != < <= > >=.
Result<FieldTest> read_predicate(QueryReader& r, std::string_view where) {
  if (!r.take("@")) return r.error("expected @field");
  const std::string key = r.word();
  const Field* f = find_field(key);
  if (f == nullptr)
    return r.error(fmt::format("unknown field '{}'; the fields are {}", key, match_keys()));
  std::string op;
  for (std::string_view candidate : {"!=", "<=", ">=", "=", "<", ">"})
    if (r.take(candidate)) {
      op = candidate;
      break;
    }
  if (op.empty()) return r.error("expected one of = != < <= > >=");
  auto json = r.value();
  if (!json) return r.error("expected an integer, a quoted string, true or false");
  if (!r.take("]")) return r.error("expected ]");
  auto value = scalar_from(*json, *f, where);
  if (!value.is_ok()) return value.status();
  FieldTest test{key, {}, {}};
  ValueSpec& spec = test.spec;
  if (op == "=" || op == "!=") {
    spec.kind = ValueSpec::Kind::exact;
    spec.values.push_back(value.value());
    spec.negate = op == "!=";
    return test;
  }
  const bool integral = f->type == FieldType::integer || f->type == FieldType::per_dim;
  if (!integral && f->type != FieldType::version && f->type != FieldType::arch)
    return r.error(fmt::format("'{}' is not ordered: use = or !=", key));
  if (!integral && (op == "<" || op == ">"))
    return r.error(fmt::format("'{}' takes <= and >=, not {}", key, op));
  Scalar bound = value.value();
  if (op == "<") bound = std::get<std::int64_t>(bound) - 1;
  if (op == ">") bound = std::get<std::int64_t>(bound) + 1;
  spec.kind = ValueSpec::Kind::range;
  (op[0] == '<' ? spec.max : spec.min) = bound;
  return test;
}

}  // namespace

Result<CallMatch> CallMatch::from_query(std::string_view query, std::string_view where) {
  QueryReader r(query, where);
  std::vector<FieldTest> tests;
  if (Status s = read_head(r, tests); !s.is_ok()) return s;
  while (!r.done()) {
    if (!r.take("[")) return r.error("expected [@field op value]");
    auto test = read_predicate(r, where);
    if (!test.is_ok()) return test.status();
    tests.push_back(std::move(test).value());
  }
  CallMatch m;
  for (FieldTest& t : tests) m.add(std::move(t));
  if (Status s = m.check_applicability(where); !s.is_ok()) return s;
  return m;
}

std::optional<Version> parse_version(std::string_view text) {
  Version parts;
  std::size_t start = 0;
  for (std::size_t at = 0; at <= text.size(); ++at) {
    if (at != text.size() && text[at] != '.') continue;
    int part = 0;
    const auto [end, error] = std::from_chars(text.data() + start, text.data() + at, part);
    if (error != std::errc() || end != text.data() + at || at == start) return std::nullopt;
    parts.push_back(part);
    start = at + 1;
  }
  return parts;
}

std::string match_keys() {
  std::string keys;
  for (const Field& f : fields()) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", f.name);
  return keys;
}

void CallMatch::add(FieldTest test) {
  std::string text = test.field;
  if (test.per_dim.empty()) {
    text += spec_text(test.spec);
  } else {
    std::string dims;
    for (const ValueSpec& s : test.per_dim) dims += (dims.empty() ? "" : ",") + spec_text(s);
    text += "[" + dims + "]";
  }
  summary_ += (summary_.empty() ? "" : " ") + text;
  tests_.push_back(std::move(test));
}

// A field of some op kinds tested in a match that names only others can
// never match: say so at load, rather than widen or empty it silently.
Status CallMatch::check_applicability(std::string_view where) const {
  unsigned kinds = kAll;
  for (const FieldTest& t : tests_)
    if (t.field == "op" && !t.spec.negate && !t.spec.values.empty()) {
      kinds = 0;
      for (const Scalar& v : t.spec.values)
        for (int k = 0; k < 5; ++k)
          if (std::get<std::string>(v) == op_kind_name(static_cast<OpKind>(k))) kinds |= 1u << k;
    }
  for (const FieldTest& t : tests_) {
    const Field& f = *find_field(t.field);
    if ((f.kinds & kinds) == 0)
      return Status::invalid(
          fmt::format("{}: match key '{}' applies to {} only, and this rule's "
                      "op is {}",
                      where, f.name, kinds_text(f.kinds), kinds_text(kinds)));
  }
  return Status::ok();
}

Result<CallMatch> CallMatch::from_json(const nlohmann::json& match, std::string_view where) {
  if (!match.is_object())
    return Status::invalid(
        fmt::format("{}: \"match\" must be an object of keys ({})", where, match_keys()));
  CallMatch m;
  for (const auto& [key, value] : match.items()) {
    const Field* f = find_field(key);
    if (f == nullptr)
      return Status::invalid(
          fmt::format("{}: unknown match key '{}'; the keys are {}", where, key, match_keys()));
    FieldTest test{key, {}, {}};
    if (f->type == FieldType::per_dim && value.is_array()) {
      if (value.empty() || value.size() > 3)
        return Status::invalid(
            fmt::format("{}: match key '{}' has {} values; give one per "
                        "spatial dim (1 to 3)",
                        where, key, value.size()));
      for (const auto& item : value) {
        auto spec = spec_from(item, *f, where);
        if (!spec.is_ok()) return spec.status();
        test.per_dim.push_back(std::move(spec).value());
      }
    } else {
      auto spec = spec_from(value, *f, where);
      if (!spec.is_ok()) return spec.status();
      test.spec = std::move(spec).value();
    }
    m.add(std::move(test));
  }
  if (Status s = m.check_applicability(where); !s.is_ok()) return s;
  return m;
}

bool CallMatch::matches(const CallFacts& call) const {
  return std::all_of(tests_.begin(), tests_.end(),
                     [&](const FieldTest& t) { return test_holds(call, t); });
}

}  // namespace convjit::rules
