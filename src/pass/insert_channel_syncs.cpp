// insert_channel_syncs (lowered developer kernels, after insert_syncs): orders the two halves of
// every channel legalize_copies made, a GM workspace one core writes and the other reads
// (DEVMODE.md section 4, "Channels"): the producer core raises a mode-2 cross-core flag right
// after its copy into the workspace (on that copy's pipe, so the flag fires when the data is in
// GM), and the consumer core waits for it right before its copy out (CrossCoreWaitFlag blocks
// every pipe of the waiting core on A2, so nothing after it can run early).
//
// A mode-2 flag set by the AIC counts for both AIVs of its group, and an AIC wait completes only
// once both AIVs have set. Until split_aiv exists, the vector work runs on AIV 0 (`if vid ==
// 0`), so AIV 1 runs the flag protocol alone: the `else` branch of that `if` holds the vector
// side's cross-core flags in the same order. Without it AIV 1 would leave a flag set (a
// cube -> vector channel) or the AIC would wait forever (vector -> cube).
//
// Channels are the kernel's top-level statements (infer_scopes lowers one crossing per buffer
// between top-level statements); a channel inside a loop needs credits for slot reuse, which is
// the next step. Cross-core flag ids are given in order, 0 to 10 (11-14 belong to sync_all).
#include <unordered_map>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/pass.h"
#include "tl/target.h"

namespace tl {
namespace {

constexpr int kMaxChannelFlags = 11;  // cross-core ids 0-10; sync_all uses 11-14

/// A copy whose operand `which` (0 src, 1 dst) is the workspace `ws`.
bool copies(const Stmt& s, const BufferNode* ws, int which) {
  auto* op = s.as<TileOpNode>();
  return op && op->op->name == "copy" && op->args.size() > static_cast<size_t>(which) &&
         op->args[which].is_region() && op->args[which].region.buffer.get() == ws;
}

/// The statements of a block, nested blocks flattened (passes leave Seqs inside Seqs; they
/// print as one block).
void flatten(const Stmt& s, std::vector<Stmt>& out) {
  if (auto* q = s.as<SeqNode>()) {
    for (const Stmt& x : q->stmts) flatten(x, out);
  } else if (s.defined()) {
    out.push_back(s);
  }
}
std::vector<Stmt> stmts_of(const Stmt& s) {
  std::vector<Stmt> out;
  flatten(s, out);
  return out;
}

/// The `if vid == 0` that holds a Vector scope's work (split_cube_vector), if that is its form.
const IfNode* aiv0_branch(const ScopeNode& scope) {
  if (scope.core != CoreKind::Vector) return nullptr;
  std::vector<Stmt> body = stmts_of(scope.body);
  return body.size() == 1 ? body[0].as<IfNode>() : nullptr;
}

struct Channel {
  const BufferNode* ws;
  int id;
};

class ChannelSyncs {
 public:
  ChannelSyncs(const Target& t, std::vector<Channel> channels) : target_(t), channels_(std::move(channels)) {}

  /// The scope body with a set after every producing copy and a wait before every consuming
  /// copy; `flags` collects the cross-core flags in order (for AIV 1's protocol).
  std::vector<Stmt> rewrite(const std::vector<Stmt>& body, std::vector<Stmt>* flags) {
    std::vector<Stmt> out;
    for (const Stmt& s : body) {
      for (const Channel& c : channels_)
        if (copies(s, c.ws, 0)) {
          Stmt wait = SyncNode::make(SyncKind::WaitCrossFlag, Pipe::S, Pipe::S, Expr(c.id), 0, s->loc, SyncOrigin::Auto);
          out.push_back(wait);
          if (flags) flags->push_back(wait);
        }
      out.push_back(s);
      for (const Channel& c : channels_)
        if (copies(s, c.ws, 1)) {
          const auto* op = s.as<TileOpNode>();
          Stmt set = SyncNode::make(SyncKind::SetCrossFlag, op->op->pipe(*op, target_), Pipe::S, Expr(c.id), 2, s->loc,
                                    SyncOrigin::Auto);
          out.push_back(set);
          if (flags) flags->push_back(set);
        }
    }
    return out;
  }

 private:
  const Target& target_;
  std::vector<Channel> channels_;
};

}  // namespace

PrimFunc insert_channel_syncs(const PrimFunc& f, const Target& target) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k) return f;
  // The workspaces (GM buffers declared in the kernel), in declaration order.
  std::vector<Channel> channels;
  for (const Stmt& s : stmts_of(k->body))
    if (auto* a = s.as<AllocateNode>(); a && !a->is_view() && a->buffer->scope == MemScope::GM) {
      if (static_cast<int>(channels.size()) == kMaxChannelFlags)
        user_error(a->loc, "kernel {}: more than {} cross-core channels; cross-core flag ids 0-{} are all in use "
                           "(11-14 belong to sync_all)",
                   f->name, kMaxChannelFlags, kMaxChannelFlags - 1);
      channels.push_back({a->buffer.get(), static_cast<int>(channels.size())});
    }
  if (channels.empty()) return f;
  // Every use of a workspace must be a top-level copy of a scope: anything else is not a
  // channel this pass can order, and is reported rather than left unordered.
  for (const Channel& c : channels) {
    int uses = 0, top_level = 0;
    pre_order_visit(k->body, [&](const Stmt& s) {
      if (auto* op = s.as<TileOpNode>())
        for (const auto& a : op->args)
          if (a.is_region() && a.region.buffer.get() == c.ws) ++uses;
    });
    for (const Stmt& s : stmts_of(k->body))
      if (auto* scope = s.as<ScopeNode>()) {
        Stmt body = scope->body;
        if (const IfNode* on_aiv0 = aiv0_branch(*scope); on_aiv0) body = on_aiv0->then_case;
        for (const Stmt& x : stmts_of(body)) top_level += copies(x, c.ws, 0) || copies(x, c.ws, 1);
      }
    if (uses != top_level)
      user_error(k->loc, "kernel {}: workspace '{}' is used inside a loop or an if ({} of its {} uses); developer mode "
                         "orders cross-core channels between the kernel's top-level statements only, so far",
                 f->name, c.ws->name, uses - top_level, uses);
  }
  ChannelSyncs syncs(target, channels);
  std::vector<Stmt> top;
  for (const Stmt& s : stmts_of(k->body)) {
    auto* scope = s.as<ScopeNode>();
    if (!scope) {
      top.push_back(s);
      continue;
    }
    if (scope->core == CoreKind::Cube) {
      top.push_back(ScopeNode::make(CoreKind::Cube, SeqNode::make(syncs.rewrite(stmts_of(scope->body), nullptr), s->loc),
                                    s->loc));
      continue;
    }
    // The Vector scope: `if vid == 0: work` (split_cube_vector) gets AIV 1's flag protocol.
    const IfNode* on_aiv0 = aiv0_branch(*scope);
    TL_ASSERT(on_aiv0 && !on_aiv0->else_case.defined(), "insert_channel_syncs: the Vector scope of {} is not `if vid "
              "== 0` (split_cube_vector's form)", f->name);
    std::vector<Stmt> flags;
    Stmt work = SeqNode::make(syncs.rewrite(stmts_of(on_aiv0->then_case), &flags), on_aiv0->loc);
    Stmt aiv1 = flags.empty() ? Stmt() : SeqNode::make(std::move(flags), on_aiv0->loc);
    top.push_back(ScopeNode::make(CoreKind::Vector, IfNode::make(on_aiv0->cond, work, aiv1, on_aiv0->loc), s->loc));
  }
  Stmt kernel = KernelNode::make(k->num_blocks, k->cid, k->vid, SeqNode::make(std::move(top), k->loc), k->loc,
                                 k->threads);
  std::vector<Stmt> out;
  for (const Stmt& s : stmts_of(f->body)) out.push_back(s.as<KernelNode>() ? kernel : s);
  return with_body(f, SeqNode::make(std::move(out), f->body->loc));
}

}  // namespace tl
