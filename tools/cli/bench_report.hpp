// The report of `convjit bench`: the summary of a model's step computed
// from the measured rows, and the table the command prints.  The rows are
// the JSON objects bench_command.cpp measures: per op its layer,
// direction, count (occurrences per step), work, roofline_ms where the
// device's limits are known, and per backend the best variant's timing
// ({ms, variant, tflops or gbs, peak_fraction}, with "variants" when it
// has several) or {declined}; and the dispatcher's choice, `policy` (a
// backend) and `policy_variant` (where the backend names its variants).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace convjit::cli {

// A time range in us below a millisecond, ms below a second, else s:
// "41.2-55 us", or "1.3 ms" when the range is one value.
[[nodiscard]] std::string seconds_range_text(double low, double high);

// The time of the dispatcher's choice for an op, where it was timed: its
// backend's variant of that name, or the backend's only one.
[[nodiscard]] std::optional<double> policy_ms(const nlohmann::json& row);

// The model's step on each backend: its ops' times, each as often as the
// step runs it, and the share of the roofline bound that makes; the step
// with every op on its fastest backend (what the tuned policy aims at) and
// on the dispatcher's choice; and the JIT's geometric-mean speedup over
// cuDNN per direction.
[[nodiscard]] nlohmann::json summarize_step(const nlohmann::json& rows,
                                            const std::vector<std::string>& backends);

// The whole report as text: a header, a row per op with every backend's
// best, each variant under it, and the step's summary.
[[nodiscard]] std::string format_bench_report(const nlohmann::json& report);

}  // namespace convjit::cli
