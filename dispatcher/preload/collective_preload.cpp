#include "dispatcher/preload/collective_preload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "dispatcher/backends/jit/jit_module_cache.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/preload/preload_plan.hpp"

namespace convjit {

namespace {

using Clock = std::chrono::steady_clock;

class NvrtcPreloadCompiler final : public PreloadCompiler {
 public:
  NvrtcPreloadCompiler(std::string arch, std::string scratch)
      : arch_(std::move(arch)), scratch_(std::move(scratch)) {}

  Result<JitCacheKey> key(const std::string& name) override {
    const std::size_t at = name.find(kPreloadVariantSeparator);
    auto desc = parse_descriptor_name(name.substr(0, at));
    if (!desc.is_ok()) return desc.status();
    const std::string variant = at == std::string::npos ? "" : name.substr(at + 1);
    auto plan = plan_jit_module(desc.value(), arch_, variant);
    if (!plan.is_ok()) return plan.status();
    JitCacheKey key = plan.value().key;
    plans_.emplace(name, std::move(plan).value());
    return key;
  }

  Result<CacheEntry> compile(const std::string& name) override {
    const auto plan = plans_.find(name);  // plans_ is read-only once compiles start
    if (plan == plans_.end()) return Status::invalid(fmt::format("{} was never planned", name));
    return compile_jit_module(plan->second, scratch_);
  }

 private:
  std::string arch_, scratch_;
  std::map<std::string, JitModulePlan> plans_;
};

// A step's exceptions (bad_alloc, a filesystem error) become its status, so
// that the rank still reaches the next agreement.
template <class Step>
Status guarded(Step&& step) {
  try {
    return step();
  } catch (const std::exception& e) {
    return {CONVJIT_STATUS_INTERNAL_ERROR, e.what()};
  }
}

// ---- entries on the wire: [index u64][ok u8][length u64][bytes] ... ---------

struct Record {
  std::uint64_t index = 0;
  bool ok = false;
  std::string bytes;  // an encoded entry, or why there is none
};

void append_u64(std::string& out, std::uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string encode_records(const std::vector<Record>& records) {
  std::string out;
  for (const Record& r : records) {
    append_u64(out, r.index);
    out.push_back(r.ok ? '\1' : '\0');
    append_u64(out, r.bytes.size());
    out += r.bytes;
  }
  return out;
}

Result<std::vector<Record>> decode_records(const std::string& in) {
  std::vector<Record> out;
  std::size_t at = 0;
  const auto read_u64 = [&](std::uint64_t& v) {
    if (in.size() - at < sizeof v) return false;
    std::memcpy(&v, in.data() + at, sizeof v);
    at += sizeof v;
    return true;
  };
  while (at < in.size()) {
    Record r;
    std::uint64_t length = 0;
    if (!read_u64(r.index) || at >= in.size()) break;
    r.ok = in[at++] == '\1';
    if (!read_u64(length) || in.size() - at < length) break;
    r.bytes = in.substr(at, length);
    at += length;
    out.push_back(std::move(r));
  }
  if (at != in.size()) return Status{CONVJIT_STATUS_INTERNAL_ERROR, "a truncated batch of entries"};
  return out;
}

// ---- the protocol's state on one rank ---------------------------------------

struct Key {
  std::string name;
  std::optional<JitCacheKey> key;  // none: unsupported or a bad name
  Status problem;
};

class Preload {
 public:
  Preload(const Communicator& comm, JitCache& cache, PreloadCompiler& compiler,
          const PreloadRequest& request, const std::function<void(const PreloadEvent&)>& on_compile)
      : comm_(comm),
        cache_(cache),
        compiler_(compiler),
        request_(request),
        on_compile_(on_compile) {}

  Result<PreloadReport> run() {
    const auto start = Clock::now();
    report_.ranks = comm_.size();
    if (Status s = comm_.agree(request_.setup, "before the preload"); !s.is_ok()) return s;
    if (Status s = gather_names(); !s.is_ok()) return s;
    if (Status s = comm_.agree(guarded([&] { return plan_keys(); }), "naming the kernels");
        !s.is_ok())
      return s;
    if (Status s = gather_holdings(); !s.is_ok()) return s;
    plan_ = assign_preload_work(hashes(), holdings_);
    std::string mine;
    if (Status s = comm_.agree(guarded([&] { return work(mine); }), "compiling"); !s.is_ok())
      return s;
    if (Status s = exchange(mine); !s.is_ok()) return s;
    if (Status s = verify(); !s.is_ok()) return s;
    if (Status s = comm_.barrier(); !s.is_ok()) return s;
    report_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return report_;
  }

 private:
  // This rank's place among the node leaders, if it leads its node.
  [[nodiscard]] std::optional<std::size_t> leader_slot() const {
    const auto& leaders = holdings_.leaders;
    const auto at = std::find(leaders.begin(), leaders.end(), comm_.rank());
    if (at == leaders.end()) return std::nullopt;
    return static_cast<std::size_t>(at - leaders.begin());
  }

  // Step 1: every rank's descriptors, deduplicated in one order for all.
  Status gather_names() {
    const nlohmann::json mine{{"node", comm_.node()}, {"names", request_.names}};
    auto all = comm_.allgather(mine.dump());
    if (!all.is_ok()) return all.status();
    std::set<std::string> names;
    std::set<int> nodes;
    for (std::size_t r = 0; r < all.value().size(); ++r) {
      const auto json = nlohmann::json::parse(all.value()[r]);
      const int node = json.at("node").get<int>();
      if (nodes.insert(node).second) holdings_.leaders.push_back(static_cast<int>(r));
      for (const auto& name : json.at("names")) {
        names.insert(name.get<std::string>());
        ++report_.requested;
      }
    }
    report_.nodes = static_cast<int>(nodes.size());
    for (const std::string& name : names) keys_.push_back({name, std::nullopt, Status::ok()});
    report_.distinct = keys_.size();
    return Status::ok();
  }

  Status plan_keys() {
    for (Key& k : keys_) {
      auto key = compiler_.key(k.name);
      if (key.is_ok())
        k.key = std::move(key).value();
      else
        k.problem = key.status();
    }
    return Status::ok();
  }

  std::vector<std::string> hashes() const {
    std::vector<std::string> out;
    for (const Key& k : keys_) out.push_back(k.key ? k.key->hash : "");
    return out;
  }

  // Step 2: what each leader's local tier and the shared tier hold.
  std::string holding(bool shared) {
    std::string out;
    const bool can_take =
        shared ? !cache_.writable_directory().empty() : !cache_.local_directory().empty();
    for (const Key& k : keys_) {
      const bool held =
          k.key && (shared ? cache_.lookup_shared(*k.key) : cache_.lookup_local(*k.key)).is_ok();
      out.push_back(held ? '1' : (k.key && can_take) ? '0' : '-');
    }
    return out;
  }

  Status gather_holdings() {
    std::string mine;
    Status checked = guarded([&] {
      if (leader_slot())
        mine = nlohmann::json{{"local", holding(false)},
                              {"shared", comm_.rank() == 0 ? holding(true) : ""}}
                   .dump();
      return Status::ok();
    });
    if (Status s = comm_.agree(checked, "reading its cache tiers"); !s.is_ok()) return s;
    auto all = comm_.allgather(mine);
    if (!all.is_ok()) return all.status();
    for (int leader : holdings_.leaders) {
      const auto json = nlohmann::json::parse(all.value()[static_cast<std::size_t>(leader)]);
      holdings_.local.push_back(json.at("local").get<std::string>());
      if (leader == 0) holdings_.shared = json.at("shared").get<std::string>();
    }
    return Status::ok();
  }

  [[nodiscard]] bool from_shared(std::size_t key) const { return holdings_.shared[key] == '1'; }

  // Step 3, this rank's part: read what it sends, compile what it was given.
  Status work(std::string& batch) {
    std::vector<Record> records;
    std::vector<std::size_t> compiles;
    for (std::size_t i = 0; i < plan_.size(); ++i) {
      if (plan_[i].rank != comm_.rank()) continue;
      if (plan_[i].action == PreloadAction::compile) {
        compiles.push_back(i);
        continue;
      }
      auto entry =
          from_shared(i) ? cache_.lookup_shared(*keys_[i].key) : cache_.lookup_local(*keys_[i].key);
      records.push_back({i, entry.is_ok(),
                         entry.is_ok() ? encode_cache_entry(entry.value())
                                       : "it vanished from rank " + std::to_string(comm_.rank()) +
                                             "'s cache: " + entry.status().message()});
    }
    compile_all(compiles, records);
    std::sort(records.begin(), records.end(),
              [](const Record& a, const Record& b) { return a.index < b.index; });
    batch = encode_records(records);
    return Status::ok();
  }

  void compile_all(const std::vector<std::size_t>& compiles, std::vector<Record>& records) {
    std::mutex done;
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t n; (n = next.fetch_add(1)) < compiles.size();) {
        const std::size_t i = compiles[n];
        const auto started = Clock::now();
        auto entry = compiler_.compile(keys_[i].name);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
        std::lock_guard lock(done);
        records.push_back(
            {i, entry.is_ok(),
             entry.is_ok() ? encode_cache_entry(entry.value()) : entry.status().message()});
        if (entry.is_ok()) ++report_.compiled_here;
        if (on_compile_)
          on_compile_(
              {keys_[i].name, entry.is_ok(), ms, entry.is_ok() ? "" : entry.status().message()});
      }
    };
    const int threads = std::clamp<int>(request_.jobs, 1, static_cast<int>(compiles.size()) + 1);
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  }

  // Steps 3 and 4: every batch to every rank; leaders and rank 0 write.
  Status exchange(std::string& mine) {
    std::set<int> senders;
    for (const KeyAssignment& a : plan_)
      if (a.action != PreloadAction::none) senders.insert(a.rank);
    Status written;
    for (int sender : senders) {
      std::string batch = sender == comm_.rank() ? std::move(mine) : std::string();
      if (Status s = comm_.broadcast(batch, sender); !s.is_ok()) return s;
      Status taken = guarded([&] { return take(batch, sender); });
      if (written.is_ok()) written = taken;
    }
    cache_.enforce_size_bounds(wrote_local_, wrote_shared_);  // once for the whole batch
    count();
    return comm_.agree(written, "writing its cache tier");
  }

  Status take(const std::string& batch, int sender) {
    auto records = decode_records(batch);
    if (!records.is_ok()) return records.status();
    Status first_failure;
    const std::optional<std::size_t> slot = leader_slot();
    const std::string* local = slot ? &holdings_.local[*slot] : nullptr;  // what it holds
    for (Record& r : records.value()) {
      Key& k = keys_.at(r.index);
      auto entry =
          r.ok ? decode_cache_entry(r.bytes) : Result<CacheEntry>(Status::invalid(r.bytes));
      if (entry.is_ok() && entry.value().preimage != k.key->preimage)
        entry = Status::invalid(fmt::format("rank {} sent another key's entry", sender));
      if (!entry.is_ok()) {
        k.problem = entry.status();
        continue;
      }
      Status stored;
      if (local != nullptr && (*local)[r.index] == '0') {
        stored = cache_.store_local(*k.key, entry.value());
        wrote_local_ = true;
      }
      if (stored.is_ok() && comm_.rank() == 0 && holdings_.shared[r.index] == '0') {
        stored = cache_.store_shared(*k.key, entry.value());
        wrote_shared_ = true;
      }
      if (!stored.is_ok() && first_failure.is_ok()) first_failure = stored;
    }
    return first_failure;
  }

  void count() {
    std::map<int, std::size_t> by_leader;
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      const Key& k = keys_[i];
      if (k.problem.code() == CONVJIT_STATUS_UNSUPPORTED) {
        ++report_.unsupported;
        continue;
      }
      if (!k.problem.is_ok()) {
        ++report_.failed;
        report_.problems.push_back(k.name + ": " + k.problem.message());
        continue;
      }
      switch (plan_[i].action) {
        case PreloadAction::none:
          ++report_.cached;
          break;
        case PreloadAction::send:
          ++(from_shared(i) ? report_.copied_from_shared : report_.copied_from_node);
          break;
        case PreloadAction::compile:
          ++report_.compiled;
          ++by_leader[plan_[i].rank];
          break;
      }
    }
    for (int leader : holdings_.leaders)
      report_.compiled_by_leader.push_back({leader, by_leader[leader]});
  }

  // Step 5: every rank loads every entry from its node's tier.
  Status verify() {
    report_.local_tier = cache_.local_directory();
    report_.shared_tier = cache_.writable_directory();
    std::size_t expected = 0;
    const bool local = !report_.local_tier.empty();
    Status loadable = guarded([&] {
      for (const Key& k : keys_) {
        if (!k.key || !k.problem.is_ok()) continue;
        ++expected;
        if ((local ? cache_.lookup_local(*k.key) : cache_.lookup_shared(*k.key)).is_ok())
          ++report_.local_entries;
      }
      if (report_.local_entries == expected) return Status::ok();
      return Status{
          CONVJIT_STATUS_EXECUTION_FAILED,
          fmt::format("only {} of {} entries load from {}", report_.local_entries, expected,
                      report_.local_tier.empty() ? "the shared tier" : report_.local_tier)};
    });
    return comm_.agree(loadable, "checking its node's tier");
  }

  const Communicator& comm_;
  JitCache& cache_;
  PreloadCompiler& compiler_;
  const PreloadRequest& request_;
  const std::function<void(const PreloadEvent&)>& on_compile_;
  std::vector<Key> keys_;
  PreloadHoldings holdings_;
  std::vector<KeyAssignment> plan_;
  PreloadReport report_;
  bool wrote_local_ = false, wrote_shared_ = false;
};

}  // namespace

std::unique_ptr<PreloadCompiler> nvrtc_preload_compiler(std::string arch, std::string scratch) {
  return std::make_unique<NvrtcPreloadCompiler>(std::move(arch), std::move(scratch));
}

Result<PreloadReport> collective_preload(
    const Communicator& comm, JitCache& cache, PreloadCompiler& compiler,
    const PreloadRequest& request, const std::function<void(const PreloadEvent&)>& on_compile) {
  return Preload(comm, cache, compiler, request, on_compile).run();
}

}  // namespace convjit
