#include "dispatcher/backends/emulator/warpgroup_instructions.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"

namespace convjit::emulator {

namespace {

const char* setmaxnreg_name(bool increase) {
  return increase ? "setmaxnreg.inc.sync.aligned.u32" : "setmaxnreg.dec.sync.aligned.u32";
}

std::string entry(const std::vector<std::string>& log, std::size_t i) {
  return i < log.size() ? log[i] : std::string("nothing");
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
                        setmaxnreg_name(p->increase), p->registers, first->registers));
      });
      return;
    }
  }
  if (first != nullptr)
    BlockScheduler::current().warpgroup_instructions().setmaxnreg(lanes.first_thread / kWarpSize,
                                                                  lanes.first_thread, *first);
}

void WarpgroupInstructions::reset(unsigned threads) {
  threads_ = threads;
  log_.assign((threads + kWarpSize - 1) / kWarpSize, {});
  registers_.assign(log_.size(), 0);
}

void WarpgroupInstructions::note(unsigned warp, unsigned first_thread, std::string instruction) {
  if (threads_ % (kWarpsPerWarpgroup * kWarpSize) != 0)
    as_thread(first_thread, [&] {
      report_violation(
          fmt::format("{} in a block of {} threads: warpgroup instructions need "
                      "whole warpgroups of 128",
                      instruction, threads_));
    });
  log_[warp].push_back(std::move(instruction));
}

void WarpgroupInstructions::setmaxnreg(unsigned warp, unsigned first_thread,
                                       const SetmaxnregPayload& step) {
  const unsigned now = registers_[warp];
  if (now != 0 && (step.increase ? step.registers < now : step.registers > now))
    as_thread(first_thread, [&] {
      report_violation(fmt::format(
          "{} {} in warp {}, which holds {} registers: .inc must not lower the count, nor .dec "
          "raise it",
          setmaxnreg_name(step.increase), step.registers, warp, now));
    });
  registers_[warp] = step.registers;
  note(warp, first_thread,
       fmt::format("setmaxnreg.{} {}", step.increase ? "inc" : "dec", step.registers));
}

void WarpgroupInstructions::report_mismatches() const {
  for (std::size_t w = 0; w < log_.size(); ++w) {
    const std::size_t leader = w - w % kWarpsPerWarpgroup;
    if (log_[w] == log_[leader]) continue;
    std::size_t i = 0;
    while (i < log_[w].size() && i < log_[leader].size() && log_[w][i] == log_[leader][i]) ++i;
    as_thread(static_cast<unsigned>(w * kWarpSize), [&] {
      report_violation(fmt::format(
          "warp {}'s warpgroup instruction {} is {}, warp {}'s {}: every warp of a warpgroup "
          "runs the same ones, with the same operands",
          w, i + 1, entry(log_[w], i), leader, entry(log_[leader], i)));
    });
    return;
  }
}

}  // namespace convjit::emulator
