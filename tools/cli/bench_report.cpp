#include "bench_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <utility>

namespace convjit::cli {

std::string seconds_range_text(double low, double high) {
  const auto [scale, unit] = high < 1e-3 ? std::pair{1e6, "us"}
                             : high < 1.0 ? std::pair{1e3, "ms"}
                                          : std::pair{1.0, "s"};
  if (high - low <= 0.005 * high) return fmt::format("{:.3g} {}", low * scale, unit);
  return fmt::format("{:.3g}-{:.3g} {}", low * scale, high * scale, unit);
}

std::optional<double> policy_ms(const nlohmann::json& row) {
  const std::string backend = row.value("policy", "");
  if (!row.contains(backend) || !row[backend].contains("ms")) return std::nullopt;
  const nlohmann::json& timing = row[backend];
  if (!timing.contains("variants")) return timing["ms"].get<double>();
  const nlohmann::json& chosen =
      timing["variants"].value(row.value("policy_variant", ""), nlohmann::json());
  if (!chosen.is_object() || !chosen.contains("ms")) return std::nullopt;
  return chosen["ms"].get<double>();
}

nlohmann::json summarize_step(const nlohmann::json& rows,
                              const std::vector<std::string>& backends) {
  std::map<std::string, double> step_ms, log_speedup;
  std::map<std::string, long long> timed, speedups;
  double bound_ms = 0, fastest_ms = 0, chosen_ms = 0;
  long long chosen_ops = 0;
  bool bounded = true;
  for (const auto& row : rows) {
    const auto count = static_cast<double>(row["count"].get<long long>());
    if (const std::optional<double> ms = policy_ms(row)) chosen_ms += count * *ms, ++chosen_ops;
    bounded = bounded && row.contains("roofline_ms");
    if (bounded) bound_ms += count * row["roofline_ms"].get<double>();
    double fastest = INFINITY;
    for (const std::string& b : backends) {
      if (!row.contains(b) || !row[b].contains("ms")) continue;
      const double ms = row[b]["ms"].get<double>();
      step_ms[b] += count * ms, ++timed[b], fastest = std::min(fastest, ms);
    }
    if (std::isfinite(fastest)) fastest_ms += count * fastest;
    if (!row.contains("jit_speedup")) continue;
    for (const std::string& key : {row["direction"].get<std::string>(), std::string("all")})
      log_speedup[key] += std::log(row["jit_speedup"].get<double>()), ++speedups[key];
  }
  nlohmann::json out{{"fastest_per_op_ms", fastest_ms},
                     {"policy", {{"ms", chosen_ms}, {"ops", chosen_ops}}},
                     {"backends", nlohmann::json::object()}};
  for (const std::string& b : backends) {
    nlohmann::json& entry = out["backends"][b];
    entry = {{"ms", step_ms[b]}, {"ops", timed[b]}};
    // A share of the bound only over the same ops as the bound.
    if (bounded && timed[b] == static_cast<long long>(rows.size()) && step_ms[b] > 0)
      entry["roofline_fraction"] = bound_ms / step_ms[b];
  }
  if (bounded) out["roofline_ms"] = bound_ms;
  // The JIT's predicted step per GPU, over the ops predicted there.
  for (const auto& row : rows) {
    if (!row.contains("predicted") || !row["predicted"].contains("gpus")) continue;
    const auto count = static_cast<double>(row["count"].get<long long>());
    for (const auto& [gpu, p] : row["predicted"]["gpus"].items()) {
      nlohmann::json& step = out["predicted_step"][gpu];
      if (step.is_null()) step = {{"seconds", {0.0, 0.0}}, {"ops", 0}, {"missing", 0}};
      if (!p.contains("seconds")) {
        step["missing"] = step["missing"].get<int>() + 1;
        continue;
      }
      for (int i = 0; i < 2; ++i)
        step["seconds"][i] = step["seconds"][i].get<double>() + count * p["seconds"][i].get<double>();
      step["ops"] = step["ops"].get<int>() + 1;
    }
  }
  if (!speedups.empty()) {
    out["jit_speedup_geomean"] = nlohmann::json::object();
    for (const auto& [key, sum] : log_speedup)
      out["jit_speedup_geomean"][key] = std::exp(sum / static_cast<double>(speedups[key]));
  }
  return out;
}

namespace {

// A backend's time for an op, and its rate: arithmetic for a conv that
// is not bound by memory, bytes otherwise.
std::string cell(const nlohmann::json& row, const std::string& backend) {
  const nlohmann::json& timing = row[backend];
  if (!timing.contains("ms")) return "declined";
  std::string rate = fmt::format("{:.1f} GB/s", timing.value("gbs", 0.0));
  if (timing.contains("tflops") && row.value("bound", "") != "memory") {
    const double tflops = timing["tflops"].get<double>();
    rate =
        tflops < 1 ? fmt::format("{:.1f} GF/s", 1e3 * tflops) : fmt::format("{:.2f} TF/s", tflops);
  }
  const std::string peak =
      timing.contains("peak_fraction")
          ? fmt::format(" {:.0f}%", 100 * timing["peak_fraction"].get<double>())
          : "";
  const std::string variant =
      timing.contains("variants") ? " " + timing["variant"].get<std::string>() : "";
  return fmt::format("{:.4f} ms {}{}{}", timing["ms"].get<double>(), rate, peak, variant);
}

// Each backend's column as wide as its widest cell.
std::vector<std::size_t> column_widths(const nlohmann::json& report,
                                       const std::vector<std::string>& backends) {
  std::vector<std::size_t> widths;
  for (const auto& b : backends) {
    std::size_t width = b.size();
    for (const auto& row : report["ops"]) width = std::max(width, cell(row, b).size());
    widths.push_back(width);
  }
  return widths;
}

// Under an op's row, the JIT's auto variant predicted on each GPU (--predict).
void print_prediction(const nlohmann::json& row, std::string& out) {
  if (!row.contains("predicted")) return;
  const nlohmann::json& p = row["predicted"];
  if (p.contains("declined")) {
    fmt::format_to(std::back_inserter(out), "    predicted: none, {}\n",
                   p["declined"].get<std::string>());
    return;
  }
  std::string line;
  for (const auto& [gpu, g] : p["gpus"].items())
    line += fmt::format("{}{} {}", line.empty() ? "" : ", ", gpu,
                        g.contains("seconds") ? seconds_range_text(g["seconds"][0], g["seconds"][1])
                                              : "none (" + g["missing"].get<std::string>() + ")");
  fmt::format_to(std::back_inserter(out), "    predicted (jit {}): {}\n",
                 p["variant"].get<std::string>(), line);
}

// Under an op's row, each of a backend's variants when it has several.
void print_variants(const nlohmann::json& row, const std::vector<std::string>& backends,
                    std::string& out) {
  for (const std::string& b : backends) {
    if (!row[b].contains("variants")) continue;
    std::string line;
    for (const auto& [id, timing] : row[b]["variants"].items()) {
      line += line.empty() ? "" : ", ";
      if (!timing.is_object()) {
        line += fmt::format("{} {}", id, timing.get<std::string>());
        continue;
      }
      line += fmt::format("{} {:.4f} ms", id, timing["ms"].get<double>());
      if (timing.contains("peak_fraction"))
        line += fmt::format(" {:.0f}%", 100 * timing["peak_fraction"].get<double>());
    }
    fmt::format_to(std::back_inserter(out), "    {} variants: {}\n", b, line);
  }
}

void print_summary(const nlohmann::json& report, const std::vector<std::string>& backends,
                   std::string& out) {
  const nlohmann::json& summary = report["summary"];
  std::string line;
  for (const std::string& b : backends) {
    const nlohmann::json& entry = summary["backends"][b];
    line += fmt::format("{}{} {:.4f} ms ({} ops", line.empty() ? "" : ", ", b,
                        entry["ms"].get<double>(), entry["ops"].get<long long>());
    if (entry.contains("roofline_fraction"))
      line +=
          fmt::format(", {:.0f}% of the roofline", 100 * entry["roofline_fraction"].get<double>());
    line += ")";
  }
  if (backends.size() > 1)
    line += fmt::format(", fastest per op {:.4f} ms", summary["fastest_per_op_ms"].get<double>());
  if (summary.contains("policy"))
    line += fmt::format(", the policy's choices {:.4f} ms ({} of {} ops timed)",
                        summary["policy"]["ms"].get<double>(),
                        summary["policy"]["ops"].get<long long>(), report["ops"].size());
  fmt::format_to(std::back_inserter(out), "step, each op as often as one step runs it: {}\n", line);
  if (summary.contains("predicted_step"))
    for (const auto& [gpu, step] : summary["predicted_step"].items())
      fmt::format_to(std::back_inserter(out), "step predicted on {} (the JIT's auto variants, {} ops{}): {}\n",
                     gpu, step["ops"].get<int>(),
                     step["missing"].get<int>() > 0
                         ? fmt::format("; {} not predicted", step["missing"].get<int>())
                         : "",
                     seconds_range_text(step["seconds"][0], step["seconds"][1]));
  if (!summary.contains("jit_speedup_geomean")) return;
  std::string speedups;
  for (const auto& [key, value] : summary["jit_speedup_geomean"].items())
    speedups += fmt::format("{}{} {:.2f}x", speedups.empty() ? "" : ", ", key, value.get<double>());
  fmt::format_to(std::back_inserter(out), "jit/cuDNN geomean: {}\n", speedups);
}

}  // namespace

std::string format_bench_report(const nlohmann::json& report) {
  std::string out;
  const auto backends = report["backends"].get<std::vector<std::string>>();
  const auto widths = column_widths(report, backends);
  fmt::format_to(std::back_inserter(out), "convjit bench: {} on {}{}, a backend's best variant\n",
                 report["model"].get<std::string>(), report["device"].get<std::string>(),
                 report["gpu"].get<std::string>().empty()
                     ? ""
                     : " (" + report["gpu"].get<std::string>() + ")");
  fmt::format_to(std::back_inserter(out), "measure: {} ({} {})\n",
                 report["measure"].get<std::string>(), report["repetitions"].get<int>(),
                 report["device"].get<std::string>() == "host" ? "calls" : "batches");
  fmt::format_to(std::back_inserter(out), "{:<24} {:<8}", "layer", "op");
  for (std::size_t i = 0; i < backends.size(); ++i)
    fmt::format_to(std::back_inserter(out), " {:<{}}", backends[i], widths[i]);
  fmt::format_to(std::back_inserter(out), " {:>9} {}\n", backends.size() > 1 ? "jit/cuDNN" : "",
                 "policy");
  for (const auto& row : report["ops"]) {
    fmt::format_to(std::back_inserter(out), "{:<24.24} {:<8}", row["layer"].get<std::string>(),
                   row["direction"].get<std::string>());
    for (std::size_t i = 0; i < backends.size(); ++i)
      fmt::format_to(std::back_inserter(out), " {:<{}}", cell(row, backends[i]), widths[i]);
    fmt::format_to(
        std::back_inserter(out), " {:>9} {}\n",
        row.contains("jit_speedup") ? fmt::format("{:.2f}x", row["jit_speedup"].get<double>()) : "",
        row["policy"].get<std::string>() +
            (row.contains("policy_variant") ? " " + row["policy_variant"].get<std::string>() : ""));
    print_variants(row, backends, out);
    print_prediction(row, out);
  }
  print_summary(report, backends, out);
  if (report["stopped_at_time_limit"].get<bool>())
    fmt::format_to(std::back_inserter(out), "stopped at --time-limit after {} of {} distinct ops\n",
                   report["ops"].size(), report["distinct_ops"].get<std::size_t>());
  return out;
}

}  // namespace convjit::cli
