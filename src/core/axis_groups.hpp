// Mesh-axis groups: the devices a collective over some mesh axes joins.
// A collective over axes A splits the mesh into groups of the devices that
// share their coordinates on every other axis; a device's rank in its group
// is row-major over its coordinates along A, in the order A is given (as
// jax.lax.axis_index over a tuple of axes). Over no axes every device is a
// group of one, of rank 0.
#pragma once

#include <string>
#include <vector>

#include "core/mesh.hpp"

namespace spmd {

// Mesh axis indices of an axes argument, Python's spelling of an axis or a
// tuple of axes: "x", "x,y", "(x, y)", "('x','y')", "(x,)", or "()", the
// empty tuple (no axes: every device is a group of one). Throws
// INVALID_ARGUMENT naming `arg` for any other text ("", ",", "x y", ")x("),
// an unknown axis (listing the mesh's axes) or a repeated one.
std::vector<int> parse_axes(const Mesh &mesh, const char *text, const char *arg);

// "'x'" or "('x', 'y')", for messages.
std::string axes_label(const Mesh &mesh, const std::vector<int> &axes);

struct AxisGroups {
  std::vector<int> axes;                  // mesh axis indices, in the caller's order
  std::vector<std::vector<int>> members;  // per group: its devices in rank order
  std::vector<size_t> group_of;           // per mesh position: its group
  std::vector<size_t> rank_of;            // per mesh position: its rank in the group

  // The groups over `axes` (checked mesh axis indices).
  static AxisGroups of(const Mesh &mesh, const std::vector<int> &axes);
  size_t group_size() const { return members.empty() ? 1 : members[0].size(); }
};

}  // namespace spmd
