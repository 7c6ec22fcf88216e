// `convjit analyze`: what a GPU would run for an operation, or for every
// operation of a model, taken apart without one (analysis/): per JIT
// variant and kernel entry, the launch, the SM resources ptxas gives it,
// the occupancy on each GPU of the architecture, and the instruction mix
// of its SASS over the whole kernel and per trip of the main loop; and the
// memory traffic of its address streams, from the emulator.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>

#include "analysis/bottleneck_model.hpp"
#include "analysis/kernel_analysis.hpp"
#include "bench_report.hpp"
#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "model_flags.hpp"
#include "problem_flags.hpp"

namespace convjit::cli {

namespace {

using namespace convjit::analysis;

// One operation to analyse, with where it comes from.
struct AnalyzedOp {
  std::string layer;  // "" for a problem given on the command line
  OpDescriptor desc;
  int count = 1;
};

std::string counts_text(const InstructionCounts& c) {
  std::string text;
  for (int k = 0; k < kInstructionClasses; ++k) {
    if (c.count[k] == 0) continue;
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", class_name(InstructionClass(k)),
                        c.count[k]);
    if (InstructionClass(k) == InstructionClass::ldgsts)
      text += fmt::format(" ({} B/thread)", c.ldgsts_bytes);
  }
  return text;
}

std::string mma_ratio(const InstructionCounts& c) {
  const int mma = c.of(InstructionClass::mma);
  if (mma == 0) return "no MMA";
  return fmt::format("{:.1f} other instructions per MMA", double(c.total - mma) / mma);
}

double ratio(double cost, double ideal) { return ideal > 0 ? cost / ideal : 1.0; }

std::string site_text(const emulator::SiteCounters& s) {
  return fmt::format("{} {} B{} of {}", emulator::memory_op_name(s.site.space, s.site.op),
                     s.site.bytes, s.site.op == emulator::MemoryOp::ldmatrix
                                       ? fmt::format(" x{}", s.site.shape) : "",
                     s.object);
}

void print_memory(const emulator::KernelMemoryCounters& m) {
  using emulator::MemorySpace;
  const double wavefronts = m.total(MemorySpace::shared, false),
               ideal_wavefronts = m.total(MemorySpace::shared, true),
               sectors = m.total(MemorySpace::global, false),
               ideal_sectors = m.total(MemorySpace::global, true);
  fmt::print("      {:<10}shared {:.4g} wavefronts ({:.2f}x ideal) in {:.4g} requests; global "
             "{:.4g} sectors ({:.2f}x ideal) in {:.4g} requests; footprint {:.1f} MB "
             "({} of {} blocks run)\n",
             "memory", wavefronts, ratio(wavefronts, ideal_wavefronts),
             m.instructions(MemorySpace::shared), sectors, ratio(sectors, ideal_sectors),
             m.instructions(MemorySpace::global), m.compulsory_sectors() * 32 / 1e6,
             m.sampled_blocks, m.blocks);
  if (const emulator::SiteCounters* worst = m.worst())
    fmt::print("      {:<10}{}: {:.2f}x ideal, {:.4g} {} over\n", "worst", site_text(*worst),
               ratio(worst->cost, worst->ideal), worst->excess(),
               worst->site.space == MemorySpace::shared ? "wavefronts" : "sectors");
}

nlohmann::json memory_json(const emulator::KernelMemoryCounters& m) {
  nlohmann::json j{{"blocks", m.blocks},
                   {"sampled_blocks", m.sampled_blocks},
                   {"mma_instructions", m.mma_instructions},
                   {"wgmma_mma_equivalents", m.wgmma_mma_equivalents}};
  for (const emulator::SiteCounters& s : m.sites)
    j["instructions"].push_back(
        {{"op", emulator::memory_op_name(s.site.space, s.site.op)},
         {"space", s.site.space == emulator::MemorySpace::shared ? "shared" : "global"},
         {"bytes_per_lane", s.site.bytes},
         {"object", s.object},
         {"requests", s.instructions},
         {s.site.space == emulator::MemorySpace::shared ? "wavefronts" : "sectors", s.cost},
         {"ideal", s.ideal}});
  for (const emulator::BufferFootprint& f : m.footprint)
    j["footprint"].push_back(
        {{"buffer", f.name}, {"sectors", f.sectors}, {"buffer_sectors", f.buffer_sectors}});
  return j;
}

std::string time_text(Range seconds) { return seconds_range_text(seconds.low, seconds.high); }

std::string percent_text(Range fraction) {
  return fmt::format("{:.0f}-{:.0f}%", 100 * fraction.low, 100 * fraction.high);
}

void print_kernel_prediction(const GpuSpec& gpu, const KernelPrediction& k) {
  if (k.skipped) {
    fmt::print("      {:<10}skipped: the call reuses its copy of w (predicted {})\n", gpu.name,
               time_text(k.seconds));
    return;
  }
  std::string limits;
  for (const Limit& l : k.limits)
    limits += fmt::format("{}{} {}", limits.empty() ? "" : ", ", l.name, time_text(l.seconds));
  fmt::print("      {:<10}predicted {}, {}-bound ({}; + latency {} over {:.0f} rounds); "
             "{:.2f} waves{}\n",
             gpu.name, time_text(k.seconds), k.limiter, limits, time_text(k.exposed_latency),
             k.rounds, k.waves,
             k.latency_stretch > 1
                 ? fmt::format("; DRAM latency not covered ({:.1f}x too few bytes in flight)",
                               k.latency_stretch)
                 : "");
}

nlohmann::json prediction_json(const VariantPrediction& v) {
  nlohmann::json j{{"gpu", v.gpu->name}};
  if (!v.missing.empty()) {
    j["missing"] = v.missing;
    return j;
  }
  j["seconds"] = {v.seconds.low, v.seconds.high};
  j["roofline_seconds"] = v.roofline_seconds;
  for (const KernelPrediction& k : v.kernels) {
    nlohmann::json kj{{"limiter", k.limiter}, {"seconds", {k.seconds.low, k.seconds.high}},
                      {"waves", k.waves}, {"latency_stretch", k.latency_stretch},
                      {"rounds", k.rounds},
                      {"exposed_latency", {k.exposed_latency.low, k.exposed_latency.high}}};
    if (k.skipped) kj["skipped"] = true;
    for (const Limit& l : k.limits)
      kj["limits"][std::string(l.name)] = {l.seconds.low, l.seconds.high};
    j["kernels"].push_back(kj);
  }
  return j;
}

void print_entry(const EntryAnalysis& e) {
  const EntryResources& r = e.resources;
  fmt::print(
      "    {}: {} blocks x {} threads; {} registers, {} barriers, {} B shared + {} B dynamic, {} B "
      "stack{}\n",
      e.launch.name, e.launch.blocks(), e.launch.threads_per_block, r.registers, r.barriers,
      r.shared_bytes, e.launch.dynamic_shared_bytes, r.cumulative_stack_bytes,
      r.spills() ? fmt::format(", SPILLS {} B stored, {} B loaded", r.spill_store_bytes,
                               r.spill_load_bytes)
                 : ", no spills");
  for (const GpuOccupancy& o : e.occupancy) {
    if (!o.occupancy.is_ok()) {
      fmt::print("      {:<10}{}\n", o.gpu->name, o.occupancy.status().message());
      continue;
    }
    const Occupancy& occ = o.occupancy.value();
    fmt::print("      {:<10}{} blocks/SM, {}/{} warps ({:.0f}%), limited by {}\n", o.gpu->name,
               occ.blocks_per_sm, occ.warps_per_sm, occ.max_warps_per_sm, 100 * occ.fraction(),
               occ.limiter);
  }
  if (e.memory) print_memory(*e.memory);
  if (!e.mix) return;
  fmt::print("      {:<10}{} instructions: {}\n", "kernel", e.mix->whole.total,
             counts_text(e.mix->whole));
  if (!e.mix->main_loop) {
    fmt::print("      {:<10}none (no backward branch)\n", "main loop");
    return;
  }
  const SassLoop& loop = *e.mix->main_loop;
  fmt::print("      {:<10}{:#06x}-{:#06x}, {} instructions{}: {}; {}\n", "main loop",
             loop.first_offset, loop.last_offset, loop.counts.total,
             loop.inner_loops ? fmt::format(" ({} inner loops counted once)", loop.inner_loops)
                              : "",
             counts_text(loop.counts), mma_ratio(loop.counts));
}

nlohmann::json counts_json(const InstructionCounts& c) {
  nlohmann::json j = nlohmann::json::object();
  for (int k = 0; k < kInstructionClasses; ++k) j[class_name(InstructionClass(k))] = c.count[k];
  j["ldgsts_bytes_per_thread"] = c.ldgsts_bytes;
  j["total"] = c.total;
  return j;
}

nlohmann::json entry_json(const EntryAnalysis& e) {
  const EntryResources& r = e.resources;
  nlohmann::json j{{"entry", e.launch.name},
                   {"blocks", e.launch.blocks()},
                   {"threads_per_block", e.launch.threads_per_block},
                   {"registers", r.registers},
                   {"barriers", r.barriers},
                   {"shared_bytes", r.shared_bytes},
                   {"dynamic_shared_bytes", e.launch.dynamic_shared_bytes},
                   {"stack_bytes", r.cumulative_stack_bytes},
                   {"spill_store_bytes", r.spill_store_bytes},
                   {"spill_load_bytes", r.spill_load_bytes}};
  for (const GpuOccupancy& o : e.occupancy) {
    nlohmann::json occ{{"gpu", o.gpu->name}};
    if (o.occupancy.is_ok()) {
      occ["blocks_per_sm"] = o.occupancy.value().blocks_per_sm;
      occ["warps_per_sm"] = o.occupancy.value().warps_per_sm;
      occ["max_warps_per_sm"] = o.occupancy.value().max_warps_per_sm;
      occ["limiter"] = o.occupancy.value().limiter;
    } else {
      occ["error"] = o.occupancy.status().message();
    }
    j["occupancy"].push_back(occ);
  }
  if (e.memory) j["memory"] = memory_json(*e.memory);
  if (e.mix) {
    j["kernel_instructions"] = counts_json(e.mix->whole);
    if (e.mix->main_loop) {
      const SassLoop& loop = *e.mix->main_loop;
      j["main_loop"] = {{"first_offset", loop.first_offset},
                        {"last_offset", loop.last_offset},
                        {"inner_loops", loop.inner_loops},
                        {"instructions", counts_json(loop.counts)},
                        {"outside_inner_loops", counts_json(loop.outside_inner)}};
    }
  }
  return j;
}

// A model's step, op by op (times its count): the predicted time of the
// variant it runs, the roofline's, and the time by what limits it.
class StepTotals {
 public:
  void add(int count, const std::vector<VariantPrediction>& predicted) {
    for (const VariantPrediction& v : predicted) {
      Totals& t = by_gpu_[std::string(v.gpu->name)];
      if (!v.missing.empty() || v.kernels.empty()) {
        ++t.unpredicted;
        continue;
      }
      t.seconds.low += count * v.seconds.low;
      t.seconds.high += count * v.seconds.high;
      t.roofline += count * v.roofline_seconds;
      // Each kernel's time goes to its limiter.
      for (const KernelPrediction& k : v.kernels)
        if (!k.skipped) t.by_limiter[std::string(k.limiter)] += count * k.seconds.mid();
    }
  }
  void print() const {
    for (const auto& [gpu, t] : by_gpu_) {
      std::string limiters;
      for (const auto& [name, seconds] : t.by_limiter)
        limiters += fmt::format("{}{} {:.0f}%", limiters.empty() ? "" : ", ", name,
                                100 * seconds / t.seconds.mid());
      fmt::print("step on {}: predicted {}, {} of its roofline ({}); time by limiter: {}{}\n",
                 gpu, time_text(t.seconds),
                 percent_text({t.roofline / t.seconds.high, t.roofline / t.seconds.low}),
                 time_text({t.roofline, t.roofline}), limiters,
                 t.unpredicted ? fmt::format("; {} ops not predicted", t.unpredicted) : "");
    }
  }
  [[nodiscard]] nlohmann::json json() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [gpu, t] : by_gpu_)
      j[gpu] = {{"seconds", {t.seconds.low, t.seconds.high}},
                {"roofline_seconds", t.roofline},
                {"seconds_by_limiter", t.by_limiter},
                {"unpredicted_ops", t.unpredicted}};
    return j;
  }

 private:
  struct Totals {
    Range seconds;
    double roofline = 0;
    std::map<std::string, double> by_limiter;
    int unpredicted = 0;
  };
  std::map<std::string, Totals> by_gpu_;
};

// Per GPU, the variant the model predicts fastest, beside the auto policy's.
class ModelChoice {
 public:
  void add(const std::string& variant, bool is_auto,
           const std::vector<VariantPrediction>& predicted) {
    for (const VariantPrediction& v : predicted) {
      if (!v.missing.empty()) continue;
      Choice& c = by_gpu_[std::string(v.gpu->name)];
      if (c.best.empty() || v.seconds.mid() < c.best_seconds.mid())
        c.best = variant, c.best_seconds = v.seconds;
      if (is_auto) c.auto_variant = variant, c.auto_seconds = v.seconds;
    }
  }
  void print() const {
    for (const auto& [gpu, c] : by_gpu_)
      fmt::print("  {:<10}fastest predicted: {} ({}){}\n", gpu, c.best,
                 time_text(c.best_seconds),
                 c.auto_variant.empty()
                     ? ""
                     : fmt::format("; auto {} is {:.2f}x that", c.auto_variant,
                                   c.auto_seconds.mid() / c.best_seconds.mid()));
  }
  [[nodiscard]] nlohmann::json json() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [gpu, c] : by_gpu_) {
      j[gpu] = {{"fastest", c.best}, {"fastest_seconds", {c.best_seconds.low, c.best_seconds.high}}};
      if (!c.auto_variant.empty())
        j[gpu]["auto_over_fastest"] = c.auto_seconds.mid() / c.best_seconds.mid();
    }
    return j;
  }

 private:
  struct Choice {
    std::string best, auto_variant;
    Range best_seconds, auto_seconds;
  };
  std::map<std::string, Choice> by_gpu_;
};

class AnalyzeCommand final : public Command {
 public:
  explicit AnalyzeCommand(CLI::App& app) {
    command_ = app.add_subcommand(
        "analyze", "Take an operation's JIT kernels apart for a GPU without one: resources, "
                   "occupancy, SASS instruction mix");
    command_->footer(
        "Compiles each JIT variant of the operation (or of every operation of --model) for\n"
        "--arch and prints per kernel entry: its launch; registers, barriers, shared memory,\n"
        "stack and spills (ptxas); blocks and warps per SM on each GPU of that architecture\n"
        "(cuda_occupancy.h); and, where nvdisasm is found (CONVJIT_NVDISASM, PATH, the CUDA\n"
        "toolkit, NVIDIA's wheels: pip install nvidia-cuda-nvdisasm), the SASS instruction mix\n"
        "of the kernel and of one trip of its main loop. The emulator runs --sample-blocks\n"
        "blocks of each kernel (the first, the last, evenly spaced ones between) and counts\n"
        "their memory traffic, scaled to the grid: shared-memory wavefronts against the\n"
        "conflict-free ideal, global 32-byte sectors against the coalesced ideal, and the\n"
        "distinct sectors each buffer has touched (the least DRAM traffic). The auto\n"
        "policy's variant is marked.\n"
        "Examples:\n"
        "  convjit analyze conv --x 32,64,56,56 --w 64,64,3,3 --pad 1,1 --layout nhwc "
        "--dtype bf16 --arch sm_90\n"
        "  convjit analyze --model resnet50 --dtype bf16 --layout nhwc --batch 32 --arch sm_80 "
        "--variant auto");
    command_->add_option("--arch", arch_, "GPU architecture: sm_90 (H100, H200) or sm_80 (A100)")
        ->required();
    command_->add_option("--variant", variant_,
                         "one variant (an id, or auto for the heuristic's choice); default: all");
    command_->add_option("--sample-blocks", sampled_blocks_,
                         "blocks of each kernel the emulator runs to count memory traffic; 0: "
                         "none")
        ->default_val(kDefaultSampledBlocks)
        ->check(CLI::Range(0, 1000));
    add_direction_flag(*command_, direction_,
                       "with --model: only the ops of this direction (the step's totals then "
                       "cover those alone)");
    command_->add_flag("--w-unchanged", w_unchanged_,
                       "predict calls that promise w unchanged (convjit_exec_t::w_version): a "
                       "kernel that copies w into another order reuses its copy and skips that "
                       "pass");
    command_->add_flag("--json", json_, "machine-readable output");
    problem_ = std::make_unique<ProblemInput>(*command_);
    model_.add_to(*command_);
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    if (gpus_of_arch(arch_).empty())
      throw UsageError(fmt::format("--arch {}: no GPU of it is modelled; give one of {}", arch_,
                                   modelled_archs()));
    const Result<Disassembler> disassembler = find_disassembler(process_environment);
    nlohmann::json report = nlohmann::json::array();
    bool failed = false;
    StepTotals totals;
    for (const AnalyzedOp& op : ops()) failed |= !analyze_op(op, disassembler, report, totals);
    if (model_.given()) {
      json_ ? report.push_back({{"model_step", totals.json()}}) : totals.print();
    }
    if (json_) fmt::print("{}\n", report.dump(2));
    return failed ? kExitRuntime : kExitOk;
  }

 private:
  std::vector<AnalyzedOp> ops() const {
    if (model_.given() && problem_->given())
      throw UsageError("give either --model or one problem (conv|pool|bias, --name), not both");
    if (!model_.given()) {
      if (!direction_.empty()) throw UsageError("--direction selects among --model's ops");
      return {{"", problem_->descriptor(), 1}};
    }
    std::vector<AnalyzedOp> out;
    for (const ModelOp& op : model_.expand())
      if (in_direction(op, direction_)) out.push_back({op.layer, op.desc, op.count});
    return out;
  }

  // The variants to analyse; NOT_AVAILABLE when --variant cannot serve `d`.
  Result<std::vector<std::string>> variants(const OpDescriptor& d) const {
    if (variant_.empty()) return jit_variants(d, variant_context(arch_));
    auto chosen = resolve_variant(d, arch_, variant_ == "auto" ? "" : variant_);
    if (!chosen.is_ok()) return chosen.status();
    return std::vector<std::string>{chosen.value()};
  }

  // A model's ops that cannot be analysed are listed as skipped, with why;
  // a single problem that cannot fails (a usage error where a flag is at fault).
  void skip(const AnalyzedOp& op, const std::string& why, bool flag_at_fault,
            nlohmann::json& report) const {
    if (op.layer.empty() && flag_at_fault) throw UsageError(why);
    if (op.layer.empty()) throw RuntimeError(why);
    const std::string name = descriptor_name(op.desc);
    json_ ? report.push_back({{"descriptor", name}, {"layer", op.layer}, {"skipped", why}})
          : fmt::print("{}  ({}, x{})\n  skipped: {}\n", name, op.layer, op.count, why);
  }

  // False when a variant could not be analysed.
  bool analyze_op(const AnalyzedOp& op, const Result<Disassembler>& disassembler,
                  nlohmann::json& report, StepTotals& totals) const {
    if (Status s = jit_supports(op.desc); !s.is_ok()) {
      skip(op, s.message(), false, report);
      return true;
    }
    const auto all = variants(op.desc);
    if (!all.is_ok()) {
      skip(op, fmt::format("--variant {}: {}", variant_, all.status().message()), true, report);
      return true;
    }
    const std::string name = descriptor_name(op.desc);
    // jit_variants lists the heuristic's choice first, and --variant auto is that choice.
    const auto auto_choice = variant_.empty() || variant_ == "auto"
                                 ? Result<std::string>(all.value().front())
                                 : resolve_variant(op.desc, arch_, "");
    if (!json_)
      fmt::print("{}{}\n", name,
                 op.layer.empty() ? "" : fmt::format("  ({}, x{})", op.layer, op.count));
    nlohmann::json j{{"descriptor", name}, {"layer", op.layer}, {"count", op.count}};
    bool ok = true;
    ModelChoice choice;
    for (const std::string& variant : all.value()) {
      const bool is_auto = auto_choice.is_ok() && auto_choice.value() == variant;
      auto analysis = analyze_variant(op.desc, arch_, variant, disassembler, sampled_blocks_);
      ok &= analysis.is_ok();
      const std::vector<VariantPrediction> predicted =
          analysis.is_ok() ? predict_variant(op.desc, analysis.value(), w_unchanged_)
                           : std::vector<VariantPrediction>{};
      choice.add(variant, is_auto, predicted);
      // The step runs the auto policy's variant, or the one --variant names.
      if (is_auto || all.value().size() == 1) totals.add(op.count, predicted);
      json_ ? j["variants"].push_back(variant_json(variant, is_auto, analysis, predicted))
            : print_variant(variant, is_auto, analysis, predicted);
    }
    if (all.value().size() > 1) json_ ? void(j["model_choice"] = choice.json()) : choice.print();
    if (json_) report.push_back(j);
    return ok;
  }

  static void print_variant(const std::string& variant, bool is_auto,
                            const Result<VariantAnalysis>& analysis,
                            const std::vector<VariantPrediction>& predicted) {
    if (!analysis.is_ok()) {
      fmt::print("  {}{}: {}\n", variant, is_auto ? " [auto]" : "", analysis.status().message());
      return;
    }
    const VariantAnalysis& a = analysis.value();
    fmt::print("  {}{} ({})\n", variant, is_auto ? " [auto]" : "", a.template_name);
    for (std::size_t i = 0; i < a.entries.size(); ++i) {
      print_entry(a.entries[i]);
      for (const VariantPrediction& v : predicted)
        if (i < v.kernels.size()) print_kernel_prediction(*v.gpu, v.kernels[i]);
    }
    for (const VariantPrediction& v : predicted)
      v.missing.empty()
          ? fmt::print("    {:<12}{}: {} of the op's roofline ({})\n", v.gpu->name,
                       time_text(v.seconds), percent_text(v.roofline_fraction()),
                       time_text({v.roofline_seconds, v.roofline_seconds}))
          : fmt::print("    {:<12}no prediction: {}\n", v.gpu->name, v.missing);
    if (!a.mix_missing.empty()) fmt::print("    no instruction mix: {}\n", a.mix_missing);
    if (!a.memory_missing.empty() && a.memory_missing != "not asked for")
      fmt::print("    no memory counters: {}\n", a.memory_missing);
  }

  static nlohmann::json variant_json(const std::string& variant, bool is_auto,
                                     const Result<VariantAnalysis>& analysis,
                                     const std::vector<VariantPrediction>& predicted) {
    nlohmann::json j{{"variant", variant}, {"auto", is_auto}};
    if (!analysis.is_ok()) {
      j["error"] = analysis.status().message();
      return j;
    }
    j["template"] = analysis.value().template_name;
    for (const EntryAnalysis& e : analysis.value().entries) j["entries"].push_back(entry_json(e));
    for (const VariantPrediction& v : predicted) j["predicted"].push_back(prediction_json(v));
    if (!analysis.value().mix_missing.empty()) j["no_instruction_mix"] = analysis.value().mix_missing;
    if (!analysis.value().memory_missing.empty())
      j["no_memory_counters"] = analysis.value().memory_missing;
    return j;
  }

  CLI::App* command_ = nullptr;
  std::unique_ptr<ProblemInput> problem_;
  ModelFlags model_;
  std::string arch_;
  std::string variant_;
  std::string direction_;  // with --model: only this direction's ops
  unsigned sampled_blocks_ = kDefaultSampledBlocks;
  bool w_unchanged_ = false;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_analyze_command(CLI::App& app) {
  return std::make_unique<AnalyzeCommand>(app);
}

}  // namespace convjit::cli
