// Which calls a rule selects: tests on named fields of the call
// (call_facts.hpp), all of which must hold.  Written as a rules file's
// "match" object, or as a query string that parses into the same tests.
//
// A field's value is "*" (anything), one value, {"in": [...]} (any of
// them), or {"min": lo, "max": hi} (inclusive; either end may be left
// out).  A library's version, or the architecture, has no value where the
// library is not loaded (or on the host): nothing matches it there, not even
// "*", which thus means "loaded".  A bare JSON array is not a set: for the per-dim fields (spatial,
// filter, stride, pad_begin, pad_end, dilation) it holds one value per
// spatial dim, and anywhere else a two-element array would be ambiguous
// between a set and a range, so both are spelled out.  Values are compared
// as typed fields, never as substrings: cudnn-frontend's errata filter
// tests knobs by substring, so its "k2=1" also blocks "k2=12".
//
// The query form, in the spirit of YAX's XPath queries:
//   conv2d[@dir="bwdfilt"][@groups>1]     maxpool[@stride>=2]     *[@dtype="bf16"]
// names the op (conv, pool, maxpool, avgpool, bias_grad, batchnorm, resize,
// or *), optionally with its spatial dims (conv2d), then predicates
// [@field op value] with op one of = != < <= > >= and a value that is an
// integer, a quoted string, true or false.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dispatcher/result.hpp"
#include "dispatcher/rules/call_facts.hpp"

namespace convjit::rules {

// An integer, a word (op kinds, dtypes, versions, architectures, name
// patterns) or a flag.
using Scalar = std::variant<std::int64_t, std::string, bool>;

struct ValueSpec {
  enum class Kind { any, exact, in, range };
  Kind kind = Kind::any;
  std::vector<Scalar> values;  // exact: one; in: several
  std::optional<Scalar> min, max;
  bool negate = false;  // a query's !=
};

struct FieldTest {
  std::string field;
  ValueSpec spec;                  // the value, or every spatial dim's
  std::vector<ValueSpec> per_dim;  // one per spatial dim, when given so
};

class CallMatch {
 public:
  // A "match" object; errors name `where` (the file and rule) and the key.
  [[nodiscard]] static Result<CallMatch> from_json(const nlohmann::json& match,
                                                   std::string_view where);
  // A query string (see above), with the same errors.
  [[nodiscard]] static Result<CallMatch> from_query(std::string_view query, std::string_view where);

  [[nodiscard]] bool matches(const CallFacts& call) const;
  // The tests as one line for the log: "op=conv dir=bwdfilt groups>=2".
  [[nodiscard]] const std::string& summary() const { return summary_; }

 private:
  void add(FieldTest test);
  [[nodiscard]] Status check_applicability(std::string_view where) const;

  std::vector<FieldTest> tests_;
  std::string summary_;
};

// The keys a "match" object takes, for errors and the README.
[[nodiscard]] std::string match_keys();

}  // namespace convjit::rules
