// Partition specs: for each array dimension, the mesh axes (none, one or
// several) that split it. A plain value; shardings check it against a mesh.
#pragma once

#include <string>
#include <vector>

namespace spmd {

class PartitionSpec {
 public:
  using Dim = std::vector<std::string>;  // empty = None (replicated)

  struct Unchecked {};
  PartitionSpec() = default;
  PartitionSpec(std::vector<Dim> dims, Unchecked) : dims_(std::move(dims)) {}
  explicit PartitionSpec(std::vector<Dim> dims);  // validates

  // Parses the short form ("data, None", "(x,y), None") or JAX's printed
  // forms ("P('data', None)", "PartitionSpec(('x', 'y'),)"). Errors name
  // the text and a 1-based column.
  static PartitionSpec parse(const std::string &text);

  void append(Dim dim);  // validates the new dimension's axes
  const std::vector<Dim> &dims() const { return dims_; }
  size_t ndim() const { return dims_.size(); }

  // Without trailing None dimensions: the form equality uses.
  std::vector<Dim> normalized() const;
  // normalized() == o.normalized(), without copying either.
  bool same_layout(const PartitionSpec &o) const;

  // "PartitionSpec('x', None)", the seeds' form of str(P(...)).
  std::string to_string() const;
  // "x, None": the short form, for messages.
  std::string short_string() const;

 private:
  void check_dim(const Dim &dim, size_t index) const;
  std::vector<Dim> dims_;
};

// Throws INVALID_ARGUMENT, prefixed by `label`, if an axis appears twice.
void check_unique_axes(const std::vector<PartitionSpec::Dim> &dims, const std::string &label);

}  // namespace spmd
