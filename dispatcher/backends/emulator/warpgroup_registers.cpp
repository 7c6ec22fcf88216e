#include "dispatcher/backends/emulator/warpgroup_registers.hpp"

#include <fmt/format.h>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"

namespace convjit::emulator {

namespace {

constexpr unsigned kWarpsPerWarpgroup = 4;

const char* instruction(bool increase) {
  return increase ? "setmaxnreg.inc.sync.aligned.u32" : "setmaxnreg.dec.sync.aligned.u32";
}

template <class Steps>
std::string sequence(const Steps& steps) {
  std::string text = "[";
  for (const auto& s : steps)
    text += fmt::format("{}{} {}", text.size() > 1 ? ", " : "", s.increase ? "inc" : "dec",
                        s.registers);
  return text + "]";
}

}  // namespace

void complete_setmaxnreg(const WarpLanes& lanes) {
  const SetmaxnregPayload* first = nullptr;
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    if (lanes.lane[lane] == nullptr) continue;
    const auto* p = static_cast<const SetmaxnregPayload*>(lanes.lane[lane]->payload);
    if (first == nullptr) {
      first = p;
    } else if (p->registers != first->registers) {
      as_thread(lanes.first_thread + lane, [&] {
        report_violation(
            fmt::format("{} {} while lane 0 of its warp asks for {}: every lane "
                        "runs the same setmaxnreg",
                        instruction(p->increase), p->registers, first->registers));
      });
      return;
    }
  }
  if (first != nullptr)
    BlockScheduler::current().warpgroup_registers().apply(lanes.first_thread / kWarpSize,
                                                          lanes.first_thread, *first);
}

void WarpgroupRegisters::reset(unsigned threads) {
  threads_ = threads;
  steps_.assign((threads + kWarpSize - 1) / kWarpSize, {});
}

void WarpgroupRegisters::apply(unsigned warp, unsigned first_thread,
                               const SetmaxnregPayload& step) {
  as_thread(first_thread, [&] {
    if (threads_ % (kWarpsPerWarpgroup * kWarpSize) != 0)
      report_violation(
          fmt::format("{} in a block of {} threads: setmaxnreg needs whole "
                      "warpgroups of 128",
                      instruction(step.increase), threads_));
    std::vector<Step>& steps = steps_[warp];
    if (!steps.empty()) {
      const unsigned now = steps.back().registers;
      if (step.increase ? step.registers < now : step.registers > now)
        report_violation(fmt::format(
            "{} {} in warp {}, which holds {} registers: .inc must not lower the count, nor .dec "
            "raise it",
            instruction(step.increase), step.registers, warp, now));
    }
    steps.push_back({step.increase, step.registers});
  });
}

void WarpgroupRegisters::report_mismatches() const {
  for (std::size_t w = 0; w < steps_.size(); ++w) {
    const std::size_t leader = w - w % kWarpsPerWarpgroup;
    if (steps_[w] == steps_[leader]) continue;
    as_thread(static_cast<unsigned>(w * kWarpSize), [&] {
      report_violation(fmt::format(
          "warp {} ran setmaxnreg {}, warp {} of its warpgroup {}: every warp of a warpgroup "
          "runs the same ones",
          w, sequence(steps_[w]), leader, sequence(steps_[leader])));
    });
    return;
  }
}

}  // namespace convjit::emulator
