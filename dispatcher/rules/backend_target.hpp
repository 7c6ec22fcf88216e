// What a rule's action names: a backend, one of its variants, or a tuned
// library by path.  In a rules file:
//
//   "jit"  "jit[direct]"  "cudnn[algo1-tensor-op]"  "onednn[blocked]"
//   {"backend": "jit", "variant": "tc128x64"}
//   {"backend": "cudnn", "algorithm": 1}          any math type of algorithm 1
//   {"library": "/opt/tuned/lib{descriptor}.so"}  the tuned-library backend
//
// Backends and variants are checked when the file loads, against the names
// this build has, so a typo is an error rather than a rule that never acts.
// A library path is absolute; {descriptor} expands to the call's concrete
// descriptor name and {symbolic} to its symbolic-batch name.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "dispatcher/result.hpp"
#include "dispatcher/rules/call_facts.hpp"

namespace convjit::rules {

inline constexpr std::string_view kTunedLibraryBackend = "tuned-library";

class Target {
 public:
  // `where` names the file, rule and key for errors.
  [[nodiscard]] static Result<Target> from_json(const nlohmann::json& value,
                                                std::string_view where);

  [[nodiscard]] const std::string& backend() const { return backend_; }
  // True when the target is one variant (or library), not a whole backend.
  [[nodiscard]] bool names_variant() const { return !variant_.empty() || algorithm_.has_value(); }
  // Whether the target takes in `variant_id` of `backend`; a whole-backend
  // target takes in all of its variants.
  [[nodiscard]] bool covers(std::string_view backend, std::string_view variant_id,
                            const CallFacts& call) const;
  // The variant id to build for `call` ("" for the backend's own choice):
  // the library path with its placeholders expanded, or the variant.  A
  // cuDNN algorithm by number has no single id: "" and covers() picks.
  [[nodiscard]] std::string variant_for(const CallFacts& call) const;
  // "jit[direct]", "cudnn[algorithm 1]", "tuned-library[/opt/lib{descriptor}.so]".
  [[nodiscard]] std::string label() const;

  friend bool operator==(const Target&, const Target&) = default;

 private:
  std::string backend_;
  std::string variant_;  // a variant id, or the library path template
  std::optional<int> algorithm_;
};

// The backends a target may name, for errors and the README.
[[nodiscard]] std::string target_backends();

}  // namespace convjit::rules
