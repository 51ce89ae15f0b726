// The JIT cache (include/tl/jit.h): an in-memory map of backend artifacts and an on-disk store
// of the IR text they were built from, for any backend.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/jit.h"
#include "tl/op.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl::jit {

std::shared_ptr<const Artifact> compile_cached(const Backend& backend, const PrimFunc& f,
                                               const Target& target, const CompileOptions& opt);

namespace {

namespace fs = std::filesystem;
constexpr int kFormat = 2;  // 2: the allocations' origins ("origins") beside the text

// FNV-1a, 64 bits: stable across runs and platforms.
struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= c[i];
      h *= 1099511628211ull;
    }
  }
  void str(std::string_view s) {
    uint64_t n = s.size();
    bytes(&n, sizeof n);
    bytes(s.data(), s.size());
  }
  void num(int64_t v) { bytes(&v, sizeof v); }
};

/// What the op registry looks like to the compiler: names, operands, attributes. A binary
/// with a different op set never loads another binary's artifacts.
uint64_t ops_fingerprint() {
  static const uint64_t fp = [] {
    Fnv h;
    for (const OpDef* op : all_ops()) {
      h.str(op->name);
      h.num(static_cast<int64_t>(op->unit));
      for (const auto& o : op->operands) {
        h.str(o.name);
        h.num(static_cast<int64_t>(o.kind) * 64 + static_cast<int64_t>(o.access) * 4 +
              o.optional * 2 + o.variadic);
      }
      for (const auto& a : op->attrs) h.str(a.name);
    }
    return h.h;
  }();
  return fp;
}

uint64_t target_fingerprint(const Target& t) {
  Fnv h;
  h.str(t.name);
  h.str(t.chip);
  h.num(t.num_aic);
  h.num(t.num_aiv);
  for (auto c : t.capacity) h.num(c);
  for (auto a : t.alignment) h.num(a);
  return h.h;
}

/// Every source location of `f`, in order: the function's, its parameters', and each
/// statement's and declared buffer's. Part of the key because an artifact carries the
/// locations of the function it was built from into its run-time errors: two equal kernels
/// written at different lines sharing an entry had the second one's errors name the first
/// one's lines (and after a disk hit, another program's).
uint64_t locations_fingerprint(const PrimFunc& f) {
  Fnv h;
  auto loc = [&](const SourceLoc& l) {
    h.str(l.file);
    h.num(l.line);
    h.str(l.via);
  };
  loc(f->loc);
  for (const auto& p : f->params)
    if (p.is_tensor()) loc(p.tensor->loc);
  pre_order_visit(f->body, [&](const Stmt& s) {
    loc(s->loc);
    if (s->kind == StmtKind::Allocate) loc(static_cast<const AllocateNode*>(s.get())->buffer->loc);
  });
  return h.h;
}

std::string make_key(const Backend& backend, const PrimFunc& f, const Target& target,
                     const CompileOptions& opt) {
  return fmt::format(
      "{}|build={}|ops={:016x}|backend={}|target={}:{:016x}|verify={}|lower={}|dev={}|ir={:016x}|"
      "locs={:016x}",
      kCompilerVersion, build_id(), ops_fingerprint(), backend.name(), target.name,
      target_fingerprint(target), opt.verify ? 1 : 0, opt.lower ? 1 : 0, opt.dev.fingerprint(),
      structural_hash(f), locations_fingerprint(f));
}

bool env_disabled() {
  std::string s = env_value("TL_CACHE");
  return s == "0" || s == "off" || s == "false" || s == "no";
}

std::string resolve_dir(const CompileOptions& opt) {
  if (!opt.disk_cache) return "";
  if (!opt.cache_dir.empty()) return opt.cache_dir;
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  if (auto d = env_value("TL_CACHE_DIR"); !d.empty()) return d;
  if (auto d = env("XDG_CACHE_HOME"); !d.empty()) return (fs::path(d) / "tl-ascend").string();
  if (auto d = env("HOME"); !d.empty()) return (fs::path(d) / ".cache" / "tl-ascend").string();
  return "";
}

std::string file_for(const std::string& dir, const std::string& key) {
  Fnv h;
  h.str(key);
  return (fs::path(dir) / fmt::format("{:016x}.tlir", h.h)).string();
}

struct Entry {
  PrimFunc source;  // the function as first compiled (collision check)
  std::shared_ptr<const Artifact> artifact;
};

/// The very function object an entry was compiled from (kept alive by the entry, so the
/// pointer is never reused while it is in the map): a hit without hashing.
struct IdentityKey {
  const PrimFuncNode* func;
  const Target* target;
  const Backend* backend;
  bool verify, lower;
  std::string dev;  // DeveloperOptions::fingerprint
  bool operator==(const IdentityKey&) const = default;
};
struct IdentityHash {
  size_t operator()(const IdentityKey& k) const {
    return std::hash<const void*>()(k.func) ^ (std::hash<const void*>()(k.target) << 1) ^
           (std::hash<const void*>()(k.backend) << 2) ^ (k.verify ? 1u : 0u) ^ (k.lower ? 2u : 0u) ^
           (std::hash<std::string>()(k.dev) << 3);
  }
};

struct Cache {
  std::shared_mutex mu;
  std::unordered_map<std::string, Entry> map;
  std::unordered_map<IdentityKey, std::shared_ptr<const Artifact>, IdentityHash> by_identity;
  std::atomic<uint64_t> memory_hits{0}, disk_hits{0}, misses{0}, disk_writes{0}, disk_rejects{0},
      disk_errors{0};
  std::atomic<uint64_t> tmp_counter{0};
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: compiles may run during static destruction
  return *c;
}

/// Reads the artifact at `path` and has `backend` build it. nullptr without a file; a reject
/// (counted) when it exists but does not hold `key` at this version, does not parse back to
/// the recorded function, or the function fails the verifier against `spec` (what the
/// pipeline's output satisfies: a file is input like any other, and a damaged or forged one,
/// say with an address near INT64_MAX, must never reach the backend). Internal errors are
/// bugs and propagate.
std::shared_ptr<const Artifact> load_artifact(const std::string& path, const std::string& key,
                                              const Backend& backend, const Target& target,
                                              Spec spec) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return nullptr;
  // TL_CACHE_DEBUG=1 names each reject's reason on stderr: a reject is silent otherwise (a
  // recompile), which hid that every FlashAttention artifact was refused (docs/must_show.md).
  auto reject = [&](std::string_view why) {
    cache().disk_rejects.fetch_add(1, std::memory_order_relaxed);
    if (const std::string d = env_value("TL_CACHE_DEBUG"); !d.empty() && d != "0")
      fmt::print(stderr, "tl-ascend JIT cache: rejected {}: {}\n", path, why);
    return nullptr;
  };
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return reject("unreadable");
    std::ostringstream ss;
    ss << in.rdbuf();
    text = std::move(ss).str();
  }
  size_t nl = text.find('\n');
  if (nl == std::string::npos) return reject("no header line");
  auto header = nlohmann::json::parse(std::string_view(text).substr(0, nl), nullptr,
                                      /*allow_exceptions=*/false);
  if (!header.is_object()) return reject("header is not a JSON object");
  auto field = [&](const char* name) -> std::string {
    auto it = header.find(name);
    return it != header.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto fmt_it = header.find("format");
  if (fmt_it == header.end() || !fmt_it->is_number_integer() || fmt_it->get<int>() != kFormat)
    return reject("format");
  if (field("version") != kCompilerVersion || field("key") != key ||
      field("backend") != backend.name() || field("target") != target.name)
    return reject("version, key, backend or target differ");
  uint64_t want_hash = 0;
  try {
    size_t used = 0;
    std::string h = field("lowered_hash");
    want_hash = std::stoull(h, &used, 16);
    if (used != h.size() || h.empty()) return reject("lowered_hash");
  } catch (const std::exception&) {
    return reject("lowered_hash");
  }
  try {
    auto origins_it = header.find("origins");
    if (origins_it == header.end() || !origins_it->is_array()) return reject("origins");
    std::vector<std::string> origins;
    for (const auto& o : *origins_it) {
      if (!o.is_string()) return reject("origins");
      origins.push_back(o.get<std::string>());
    }
    PrimFunc lowered = parse(std::string_view(text).substr(nl + 1), path, origins);
    if (structural_hash(lowered) != want_hash)
      return reject("the parsed IR's structural hash differs");
    if (auto errs = verify(lowered, target, {.spec = spec}); !errs.empty())
      return reject(fmt::format("verifier: {}", errs.front().str()));
    return backend.build(lowered, target);
  } catch (const InternalError&) {
    throw;
  } catch (const std::exception& e) {
    return reject(e.what());
  }
}

/// What made each allocation (BufferNode::origin), in text order: the text does not print it,
/// and reports read it (tl/parser.h).
std::vector<std::string> alloc_origins(const PrimFunc& f) {
  std::vector<std::string> out;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>()) out.push_back(a->buffer->origin);
  });
  return out;
}

/// Writes `lowered`, the IR a backend was given, atomically (unique temporary file, then
/// rename). I/O errors are counted, never thrown.
void store_artifact(const std::string& dir, const std::string& path, const std::string& key,
                    const Backend& backend, const Target& target, const PrimFunc& lowered) {
  auto& c = cache();
  std::string tmp;
  try {
    nlohmann::json header = {{"format", kFormat},
                             {"version", std::string(kCompilerVersion)},
                             {"key", key},
                             {"backend", std::string(backend.name())},
                             {"target", target.name},
                             {"kernel", lowered->name},
                             {"lowered_hash", fmt::format("{:016x}", structural_hash(lowered))},
                             {"origins", alloc_origins(lowered)}};
    std::string text = header.dump() + "\n" + print(lowered);
    std::error_code ec;
    fs::create_directories(dir, ec);
    tmp = fmt::format("{}.tmp.{}.{:x}.{}", path, static_cast<long>(::getpid()),
                      std::hash<std::thread::id>()(std::this_thread::get_id()),
                      c.tmp_counter.fetch_add(1, std::memory_order_relaxed));
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      out.close();
      if (!out) throw std::runtime_error("write failed");
    }
    fs::rename(tmp, path, ec);
    if (ec) throw std::runtime_error(ec.message());
    c.disk_writes.fetch_add(1, std::memory_order_relaxed);
  } catch (const std::exception& e) {
    if (!tmp.empty()) {
      std::error_code ec;
      fs::remove(tmp, ec);
    }
    if (dynamic_cast<const InternalError*>(&e)) throw;  // a bug (in the printer), not an I/O error
    c.disk_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

std::shared_ptr<const Artifact> compile_cached(const Backend& backend, const PrimFunc& f,
                                               const Target& target, const CompileOptions& opt) {
  if (!opt.cache || env_disabled()) {
    cache().misses.fetch_add(1, std::memory_order_relaxed);
    return compile_uncached(backend, f, target, opt);
  }
  auto& c = cache();
  opt.dev.validate();  // before any lookup: an invalid combination is an error, not a cache hit
  const IdentityKey id{f.get(), &target, &backend, opt.verify, opt.lower, opt.dev.fingerprint()};
  {
    std::shared_lock lk(c.mu);
    if (auto it = c.by_identity.find(id); it != c.by_identity.end()) {
      c.memory_hits.fetch_add(1, std::memory_order_relaxed);
      return it->second;
    }
  }
  const std::string key = make_key(backend, f, target, opt);
  // The in-memory key also names the Target and Backend objects: artifacts point at the
  // target, and two backend objects are two backends.
  const std::string mem_key = fmt::format("{}|@{}|@{}", key, static_cast<const void*>(&target),
                                          static_cast<const void*>(&backend));
  {
    std::shared_lock lk(c.mu);
    auto it = c.map.find(mem_key);
    if (it != c.map.end() && structural_equal(it->second.source, f)) {
      c.memory_hits.fetch_add(1, std::memory_order_relaxed);
      return it->second.artifact;
    }
  }
  const std::string dir = resolve_dir(opt);
  const std::string path = dir.empty() ? std::string() : file_for(dir, key);
  std::shared_ptr<const Artifact> artifact;
  // The pipeline's output satisfies the planned spec; a function compiled as written, the expert
  // spec (an unverified kernel that fails it is simply compiled again).
  if (!path.empty())
    artifact = load_artifact(path, key, backend, target, opt.lower ? Spec::Planned : Spec::Expert);
  if (artifact) {
    // The disk matches on the key's structural hash alone, never on the function itself, so
    // the function is verified here: a kernel is never handed out for a function that would
    // not verify. (A memory hit compares the functions: structurally equal functions get the
    // same verdict, tests/ir/scoping_property_test.cpp.)
    // The pipeline verifies a hybrid kernel once combine_cv has given it its scope (lower.cpp),
    // so the disk hit does too: a TileLang-Ascend hybrid kernel read back from the disk is
    // otherwise refused for the scopes it never had to write (issue 29). Likewise an expert
    // kernel's alloc_shared / alloc_fragment tiles get their memory from place_expert_tiles
    // before the pipeline's verifier: without it the second run of such a kernel (a disk hit)
    // was refused for "developer-mode shared buffers" the first run compiled.
    if (opt.verify) {
      PrimFunc g = opt.lower && opt.dev.auto_cv_combine ? combine_cv(f, target) : f;
      verify_or_throw(opt.lower ? place_expert_tiles(g, target) : g, target);
    }
    c.disk_hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    c.misses.fetch_add(1, std::memory_order_relaxed);
    PrimFunc lowered = prepare(f, target, opt);  // user errors propagate; nothing is cached
    artifact = backend.build(lowered, target);
    if (!path.empty()) store_artifact(dir, path, key, backend, target, lowered);
  }
  std::unique_lock lk(c.mu);
  auto [it, inserted] = c.map.try_emplace(mem_key, Entry{f, artifact});
  if (inserted) {
    c.by_identity.emplace(id, artifact);
  } else {
    // Another thread compiled the same kernel meanwhile: everyone shares its artifact. (On a
    // hash collision with a different function, keep the entry and return our own artifact.)
    if (structural_equal(it->second.source, f)) return it->second.artifact;
  }
  return artifact;
}

CacheStats cache_stats() {
  auto& c = cache();
  CacheStats s;
  s.memory_hits = c.memory_hits.load();
  s.disk_hits = c.disk_hits.load();
  s.misses = c.misses.load();
  s.disk_writes = c.disk_writes.load();
  s.disk_rejects = c.disk_rejects.load();
  s.disk_errors = c.disk_errors.load();
  return s;
}

void reset_cache_stats() {
  auto& c = cache();
  for (auto* a :
       {&c.memory_hits, &c.disk_hits, &c.misses, &c.disk_writes, &c.disk_rejects, &c.disk_errors})
    a->store(0);
}

size_t cache_entries() {
  auto& c = cache();
  std::shared_lock lk(c.mu);
  return c.map.size();
}

void clear_cache() {
  auto& c = cache();
  std::unique_lock lk(c.mu);
  c.by_identity.clear();
  c.map.clear();
}

std::string cache_key(const Backend& backend, const PrimFunc& f, const Target& target,
                      const CompileOptions& opt) {
  return make_key(backend, f, target, opt);
}

std::string cache_dir(const CompileOptions& opt) {
  if (!opt.cache || env_disabled()) return "";
  return resolve_dir(opt);
}

std::string cache_file(const Backend& backend, const PrimFunc& f, const Target& target,
                       const CompileOptions& opt) {
  std::string dir = cache_dir(opt);
  return dir.empty() ? std::string() : file_for(dir, make_key(backend, f, target, opt));
}

}  // namespace tl::jit
