#include "runtime/recording.hpp"

#include <numeric>
#include <utility>

#include "runtime/array.hpp"

namespace spmd {

namespace {
thread_local std::shared_ptr<Recording> t_current;
thread_local WorkLog *t_work = nullptr;
}  // namespace

WorkLog::WorkLog() noexcept : previous_(std::exchange(t_work, this)) {}
WorkLog::~WorkLog() { t_work = previous_; }

void WorkLog::add_rerun(const Array &in, const Array &out,
                        std::function<void(const std::shared_ptr<Array> &input, Array &output)> rerun,
                        Rerun kind) {
  Launch l;
  for (size_t i = 0; i < out.shard_count(); ++i) l.out.push_back(out.buffer_ptr(i));
  for (size_t i = 0; i < in.shard_count(); ++i) l.in.push_back(in.buffer_ptr(i));
  l.sharding = out.sharding();
  l.dtype = out.dtype();
  l.shape = out.shape();
  l.in_sharding = in.sharding();
  l.in_dtype = in.dtype();
  l.in_shape = in.shape();
  l.rerun = std::move(rerun);
  l.kind = kind;
  launches_.push_back(std::move(l));
}

WorkLog *note_device_work() noexcept {
  if (t_work) ++t_work->count_;
  return t_work;
}

Recording::Factors Recording::Factors::per_dimension(propagate::ProgramOp::Kind kind, const Array &x) {
  Factors f;
  f.kind = kind;
  f.operands = {&x};
  f.sizes = x.shape();
  f.summed.assign(x.shape().size(), false);
  f.result_factors.resize(x.shape().size());
  std::iota(f.result_factors.begin(), f.result_factors.end(), 0);
  f.operand_factors = {f.result_factors};
  return f;
}

Recording *current_recording() noexcept { return t_current.get(); }

const std::shared_ptr<Recording> &RecordingScope::current_owner() noexcept { return t_current; }

RecordingScope::RecordingScope(std::shared_ptr<Recording> r) noexcept
    : previous_(std::exchange(t_current, std::move(r))) {}

RecordingScope::~RecordingScope() { t_current = std::move(previous_); }

}  // namespace spmd
