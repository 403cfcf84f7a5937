// Programs, libspmd's jit: ops recorded once over abstract arrays, planned
// once, run many times with new inputs.
//
// Recording runs each op's own code under a RecordingScope
// (runtime/recording.hpp): its checks, promotion and placement are the
// eager op's, its result an abstract array. The program keeps, per op, a
// replay of the call (the op's entry with its arguments bound) and what the
// op would have done: its elementwise pass, its transfers, its flops.
//
// Compiling first places the whole program as jax.jit does
// (exec/program/place.cpp): values laid out for later constraints and uses
// too, each op recorded again on its operands' new layouts. Then it plans
// the run: elementwise ops over one shape and layout whose
// intermediate results nothing else reads merge into groups that run as
// one chain kernel per shard (kernels/elementwise_chain.hpp), and every
// value is dropped after its last use. Running binds inputs, checked
// against what was recorded, replays the other ops on them and returns the
// outputs. The first run also learns which ops are exactly one launch of
// kernels from their operands into their result (no copy, collective or
// second launch): later runs launch those kernels on the new buffers
// directly, without the op's checks and placement. Nothing in the plan is
// a concrete buffer (kernels name theirs by operand and shard), so it runs
// on any inputs of the recorded kind, from several threads at once.
//
// A shard_map given values records one step of several results
// (record_multi): its body runs at every run, and its layouts are its own.
//
// Donated inputs (donate): the op reading one last may write into its
// buffers (plan_donations). Not yet: random numbers inside a program.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/collective_cache.hpp"
#include "exec/ops/op_support.hpp"
#include "kernels/elementwise_chain.hpp"
#include "runtime/array.hpp"
#include "runtime/recording.hpp"

namespace spmd {

class Program final : public Recording, public std::enable_shared_from_this<Program> {
 public:
  // One recorded op's call on concrete operands, in the order recorded: the
  // op's own entry with its other arguments bound, returning the result as
  // the eager call returns it.
  using Replay = std::function<ArrayPtr(const std::vector<ArrayPtr> &, const ops::OpOptions &)>;

  explicit Program(std::shared_ptr<Runtime> runtime);

  // An input of this shape, dtype and sharding: an abstract array.
  ArrayPtr add_input(ShardingPtr sharding, spmd_dtype dtype, Shape shape);

  // The program an op's operands are values of, or null when none is (an
  // eager call). INVALID_ARGUMENT naming the operands when two belong to
  // different programs, or naming one whose program is gone.
  static std::shared_ptr<Program> of(const std::vector<ArrayPtr> &operands,
                                     const std::vector<std::string> &names);

  // Records `fn` on `operands` (values of this program, or concrete arrays
  // it keeps as constants) and returns its abstract result; donations in
  // `options` are left to the caller. INVALID_ARGUMENT once the program is
  // compiled.
  ArrayPtr record(const char *fn, const std::vector<ArrayPtr> &operands,
                  const ops::OpOptions &options, Replay replay);

  // A step of several results whose layouts it fixes itself (a shard_map):
  // its call on concrete operands.
  using MultiReplay = std::function<std::vector<ArrayPtr>(const std::vector<ArrayPtr> &)>;

  // Records such a step on `operands`; its results are of the types and
  // layouts of `examples` (what a trial call gave). Each run checks that
  // the step's results still are, naming `fn`'s output otherwise.
  std::vector<ArrayPtr> record_multi(const char *fn, const std::vector<ArrayPtr> &operands,
                                     const std::vector<ArrayPtr> &examples, MultiReplay replay,
                                     const char *label = nullptr);

  // Output number output_count(): `value`, brought to `sharding` when one
  // is given (jax.jit's out_shardings). INVALID_ARGUMENT naming `arg` for a
  // value of another program, or once compiled.
  void add_output(const ArrayPtr &value, ShardingPtr sharding, const char *arg);

  // Ends recording and plans the run; INVALID_ARGUMENT when there is no
  // output or it is compiled already.
  void compile();
  bool compiled() const { return compiled_; }

  // Marks input k donated (jax.jit's donate_argnums): each run consumes
  // the array bound to it, and the op that reads it last may write its
  // result into its buffers. INVALID_ARGUMENT for another k, or once
  // compiled.
  void donate(size_t k);

  size_t input_count() const { return inputs_.size(); }
  size_t output_count() const { return outputs_.size(); }

  // Runs the compiled program on `inputs` (as many as recorded, each of
  // the recorded shape, dtype and layout: INVALID_ARGUMENT naming
  // "inputs[k]" otherwise) and returns its outputs. `slots[k]` is the
  // caller's slot of input k (it may be empty): a donated input's is
  // consumed by the op that reuses its buffers, if one does; the caller
  // retires the donated inputs' slots after a run that succeeds.
  std::vector<ArrayPtr> run(const std::vector<ArrayPtr> &inputs,
                            const std::vector<ArraySlot *> &slots = {}) const;
  bool donated(size_t k) const { return k < donated_.size() && donated_[k]; }

  // The program for people: each value's type and layout, each op and its
  // transfers and flops, the fused groups, and the totals.
  std::string text() const;

  // Recording's notes, about the op being recorded.
  void note_elementwise(const ElementwiseStep &step) override;
  void note_transfer(std::string what, int64_t bytes) override;
  void note_flops(int64_t flops) override;
  void note_factors(Factors factors) override;
  void note_part_made(const Array &result) override;

 private:
  // Where an op's operand comes from: a value, or a constant array.
  struct Source {
    int value = -1;
    ArrayPtr constant;
  };
  struct Transfer {
    std::string what;
    int64_t bytes = 0;
  };
  struct Value {
    ArrayPtr abstract;    // its shape, dtype and sharding
    int producer = -1;    // the node making it; -1 for an input
    int uses = 0;         // operands of nodes reading it
    bool output = false;
    bool placed_for_uses = false;  // laid out for what follows, not as its op would lay it out
  };
  // An elementwise pass the op would run, its operands as the op's.
  struct Step {
    ew::Params params;
    int operand[3] = {-1, -1, -1};  // the op's operand read; -1: a scalar or another array
    ShardingPtr out;                // the pass's result layout
    bool direct = false;            // every operand an op operand read as it is
  };
  // The op's factors for placing the whole program: Recording::Factors
  // with operands named by index; an operand that takes no part has no
  // factors.
  struct Rule {
    propagate::ProgramOp::Kind kind = propagate::ProgramOp::Kind::Elementwise;
    std::vector<int64_t> sizes;
    std::vector<bool> summed;
    std::vector<bool> permuted;
    std::vector<std::vector<int>> operand_factors;  // per operand of the node
    std::vector<int> result_factors;
    // Per operand of an elementwise op: broadcast to the result's shape
    // (its factors are then the result dimensions it is read along).
    std::vector<bool> broadcast;
    bool logarithm = false;  // a softmax that is a log-softmax
    // An op made of several contractions (an einsum of three or more
    // operands, pairwise as jax.jit runs it): each in order, the last
    // making the result, each operand the node's operand j (>= 0) or the
    // result of product p (-1 - p). The rule's own factors are unused.
    struct Product {
      std::vector<int64_t> sizes;
      std::vector<bool> summed;
      std::vector<int> sources;
      std::vector<std::vector<int>> operand_factors;  // per source
      std::vector<int> result_factors;
    };
    std::vector<Product> products;
  };
  // While an einsum of several products records: the products noted, the
  // array each made, whether the last is still running (the ops inside it
  // note their own factors, which are its), and whether one read an array
  // that is neither an operand nor a product (then it is placed as eager).
  struct PendingProducts {
    std::vector<Rule::Product> products;
    std::vector<const Array *> made;
    bool open = false;
    bool broken = false;
  };
  struct Node {
    std::string name;     // "sin", "matmul"
    std::vector<Source> operands;
    ops::OpOptions options;
    Replay replay;
    MultiReplay multi;              // set for a step of several results
    int result = -1;
    std::vector<int> more_results;  // a multi step's results after the first
    bool constraint = false;  // a layout constraint (spmd_array_reshard of a value)
    bool asked = false;       // the caller asked for the result's layout (out_sharding)
    // What recording saw the op do.
    std::vector<Step> steps;
    std::vector<Transfer> transfers;
    int64_t flops = 0;
    std::optional<Rule> rule;  // null: placed as the eager op places it
    PendingProducts pending;   // while recording an op of several products
    bool factors_noted = false;  // the op noted its factors (or an op inside it did first)
    int group = -1;       // its fused group, once compiled
  };
  struct Group {
    std::vector<int> nodes;          // in order; the last one makes the result
    std::vector<Source> inputs;      // the chain's inputs, at most 3
    std::shared_ptr<const ew::Chain> chain;
    // Its kernels, one per block of the result, as the first run made them:
    // each run points them at its buffers and launches them under the
    // lock (making them anew each run cost more than the launch).
    struct Kernels {
      std::mutex mu;
      bool made = false;
      std::vector<Kernel> kernels;
      std::vector<size_t> shards;  // the block each writes
    };
    std::shared_ptr<Kernels> kernels = std::make_shared<Kernels>();
  };
  // An op learnt to be launches of kernels, planned collectives and copies
  // between shards and nothing else: the kernels as the first run made
  // them, each of their buffers named by operand, result or intermediate
  // (an earlier step's array) and shard; a collective or copy with its
  // input's buffers named so.
  struct Launch {
    struct Slot {
      int array = -2;  // operand k; kResult; kNone; kFirstStep - j: step j's array
      size_t shard = 0;
      size_t offset = 0;  // bytes into the buffer
    };
    static constexpr int kResult = -1, kNone = -2, kFirstStep = -3;
    struct Step {
      // The earlier step whose array this one writes again (the copies of a
      // concatenation after its first, a mean's division of its psum), or -1
      // where it writes an array of its own.
      int into = -1;
      ShardingPtr sharding;  // of the array it writes (the last: the result)
      spmd_dtype dtype = SPMD_DTYPE_INVALID;
      Shape shape;
      std::shared_ptr<const std::vector<ShardLayout>> layout;  // sharding over shape
      std::vector<size_t> shards;           // the shard each kernel writes
      std::vector<std::array<Slot, 4>> slots;  // out, in0, in1, in2 of each kernel
      // The kernels, their places those of the last run: each run points
      // them at its buffers and launches them under the lock (copying
      // them would cost more than the launch).
      mutable std::vector<Kernel> kernels;
      // A collective or copy step instead (kind not None):
      // done again into the step's array from an input of the named
      // buffers (whole, per shard) laid out so. As the last step, its
      // array is the result's buffers relabeled.
      std::function<void(const ArrayPtr &, Array &)> rerun;
      WorkLog::Rerun kind = WorkLog::Rerun::None;
      std::vector<Slot> in;
      ShardingPtr in_sharding;
      spmd_dtype in_dtype = SPMD_DTYPE_INVALID;
      Shape in_shape;
    };
    std::vector<Step> steps;  // in order; the last writes the result
    // The result as the op gave it (null where the last step's array is
    // the result), where the last step is a collective or copy or writes
    // an earlier step's array (step in_place's: a mean's division of its
    // psum, a concatenation's last copy): that array relabeled, its layout
    // differing (a collective's leading dimension of groups).
    int in_place = -1;
    ShardingPtr result_sharding;
    Shape result_shape;
    mutable std::mutex mu;
  };
  struct Output {
    int value = -1;
    ShardingPtr sharding;  // null: as placed
  };

  int value_of(const Array *a) const;  // -1 when not a value of this program
  Node new_node(const char *fn, const std::vector<ArrayPtr> &operands) const;
  int add_value(ArrayPtr abstract, int producer);
  const ArrayPtr &array_of(const Source &s) const {
    return s.value >= 0 ? values_[static_cast<size_t>(s.value)].abstract : s.constant;
  }
  // Runs node n's op on abstract operands under this recording, noting
  // what it does into n, and returns its abstract result.
  ArrayPtr trace(Node &n, const std::vector<ArrayPtr> &operands, const ops::OpOptions &options,
                 const Replay &replay);
  void elementwise_rule(Node &n, const Array &result) const;
  void note_product(Node &n, Factors factors);  // a product of an einsum of several
  void products_rule(Node &n) const;             // their rule, once the op is recorded
  // jax.jit's placement of the whole program (exec/program/place.cpp):
  // values re-recorded in the layouts later constraints and uses ask for.
  void place();
  struct PlaceState;
  bool place_once();
  bool seed_values(PlaceState &st) const;  // false: a program placement leaves alone
  void fix_constraints(PlaceState &st) const;
  void seed_outputs(PlaceState &st) const;
  void simplify(PlaceState &st) const;
  void add_ops(PlaceState &st) const;
  int operand_tensor(PlaceState &st, const Source &s) const;  // the tensor an operand is
  int add_tensor(PlaceState &st, const Shape &shape, int uses) const;  // an open one
  // A broadcast of `operand` (read along factors `from`) to the rule's
  // result factors, in shape `shape`: the tensor it makes.
  int add_broadcast(PlaceState &st, const Rule &r, const std::vector<int> &from, int operand,
                    const Shape &shape) const;
  // A softmax as jax.jit places it: the reductions, broadcasts and
  // elementwise ops it is made of.
  void add_softmax(PlaceState &st, const Rule &r, int x, int result) const;
  // An einsum of several products: a contraction each, as jax.jit runs it.
  void add_products(PlaceState &st, const Node &n) const;
  bool rerecord(const PlaceState &st);  // true: an op without factors moved
  bool fusable(const Node &n) const;
  void plan_groups();
  std::shared_ptr<const ew::Chain> chain_of(Group &g) const;
  // The blocks of values a run has read for the last time, handed to its
  // later results of the same devices and sizes (a chain of ops allocates
  // its first results only); a few at most, let go when the run ends.
  class SpareBlocks {
   public:
    // Keeps `v`'s blocks where nothing else holds them.
    void keep(ArrayPtr v);
    // A result laid out as `layout` (`sharding` over `shape`) on kept
    // blocks that fit, or on new ones.
    ArrayPtr array(const std::vector<ShardLayout> &layout, const ShardingPtr &sharding, spmd_dtype dtype,
                   const Shape &shape);

   private:
    static constexpr size_t kKept = 4;
    std::vector<ArrayPtr> kept_;
  };
  // A fused group's pass into the donated input `reuse`, else into an
  // input read for the last time here (`dying`: the node's drops) that
  // nothing else holds, else into spare or new blocks.
  ArrayPtr run_group(const Group &g, const std::vector<ArrayPtr> &values, ArraySlot *reuse,
                     const std::vector<int> &dying, SpareBlocks &spare) const;
  std::vector<ArrayPtr> run_nodes(std::vector<ArrayPtr> values, const std::vector<ArraySlot *> &slots,
                                  bool learn) const;
  void plan_donations();
  std::vector<ArrayPtr> outputs_of(const std::vector<ArrayPtr> &values) const;
  static std::shared_ptr<const Launch> learn_launch(const std::vector<ArrayPtr> &operands,
                                                    const ArrayPtr &result, const WorkLog &work);
  static ArrayPtr run_launch(const Launch &l, const std::vector<ArrayPtr> &operands, SpareBlocks &spare);
  std::string source_text(const Source &s) const;

  std::shared_ptr<Runtime> runtime_;
  std::vector<Value> values_;
  std::unordered_map<const Array *, int> value_ids_;
  std::vector<int> inputs_;  // value ids
  std::vector<Node> nodes_;
  std::vector<Output> outputs_;
  std::vector<Group> groups_;
  std::vector<std::vector<int>> drops_;  // per node: values read for the last time there
  std::vector<bool> donated_;            // per input
  // Per node: a donated input it reads last, as (its operand index, the
  // input's index); for a fused group, at its last node (operand -1).
  struct Donation {
    int operand = -1;
    int input = -1;
  };
  std::vector<Donation> donations_;
  Node *recording_ = nullptr;  // the node whose op is being recorded
  // Learnt by the first run (under learn_mu_), read by later ones.
  mutable std::mutex learn_mu_;
  mutable std::atomic<bool> learnt_{false};
  mutable std::vector<std::shared_ptr<const Launch>> launches_;  // per node; null: replay
  // Per node: the collectives a replayed op plans once (exec/collective_cache.hpp).
  std::vector<std::unique_ptr<CollectiveCache>> collectives_;
  bool compiled_ = false;
};

}  // namespace spmd
