#include "core/visualize.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace spmd {

namespace {

// Python's divmod for ints: floor division, remainder with the divisor's sign.
std::pair<int64_t, int64_t> py_divmod(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) {
    --q;
    r += b;
  }
  return {q, r};
}

struct Cell {
  std::string label;
  int64_t top = 0, right = 0, bottom = 0, left = 0;
  int64_t width() const { return left + static_cast<int64_t>(label.size()) + right; }
  int64_t height() const { return top + 1 + bottom; }
};

struct BoxChars {
  const char *h, *v, *tl, *tm, *tr, *ml, *mm, *mr, *bl, *bm, *br;
};
constexpr BoxChars kSquare{"─", "│", "┌", "┬", "┐", "├", "┼", "┤", "└", "┴", "┘"};
constexpr BoxChars kAscii{"-", "|", "+", "+", "+", "+", "+", "+", "+", "+", "+"};

std::string repeat(const char *s, int64_t n) {
  std::string out;
  for (int64_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string rule(const BoxChars &b, const char *l, const char *m, const char *r,
                 const std::vector<int64_t> &widths) {
  std::string s = l;
  for (size_t j = 0; j < widths.size(); ++j) s += (j ? m : "") + repeat(b.h, widths[j]);
  return s + r + "\n";
}

}  // namespace

std::string visualize_sharding(const Sharding &sharding, const Shape &shape,
                               const PictureOptions &opt) {
  if (shape.size() < 1 || shape.size() > 2)
    invalid("shape ", shape_to_string(shape), ": the picture is drawn for 1 and 2 dimensions only");
  for (int64_t d : shape)
    if (d == 0) invalid("shape ", shape_to_string(shape), ": cannot draw an array with no elements");
  const auto layout = sharding.layout(shape);
  const bool two_d = shape.size() == 2;

  // The same arithmetic as jax.debug.visualize_sharding, in the same order,
  // so the integer truncations agree.
  const int64_t base_height = static_cast<int64_t>(10 * opt.scale);
  const double aspect = static_cast<double>(two_d ? shape[1] : 1) / static_cast<double>(shape[0]);
  const int64_t base_width = static_cast<int64_t>(static_cast<double>(base_height) * aspect);
  const double height_to_width = 2.5;

  struct Block {
    std::set<int> devices;
    double width_frac = 0, height_frac = 0;
  };
  std::map<std::pair<int64_t, int64_t>, Block> blocks;
  for (const auto &s : layout) {
    const Shape ext = s.box.extent();
    const auto key = two_d ? std::make_pair(s.block[0], s.block[1])
                           : std::make_pair(int64_t{0}, s.block[0]);
    Block &b = blocks[key];
    b.devices.insert(s.device);
    if (two_d) {
      b.height_frac = static_cast<double>(ext[0]) / static_cast<double>(shape[0]);
      b.width_frac = static_cast<double>(ext[1]) / static_cast<double>(shape[1]);
    } else {
      b.width_frac = static_cast<double>(ext[0]) / static_cast<double>(shape[0]);
    }
  }
  int64_t rows = 0, cols = 0;
  for (const auto &[k, _] : blocks) {
    rows = std::max(rows, k.first + 1);
    cols = std::max(cols, k.second + 1);
  }

  const std::string label = sharding.runtime()->backend().picture_label();
  std::vector<std::vector<Cell>> cells(static_cast<size_t>(rows),
                                       std::vector<Cell>(static_cast<size_t>(cols)));
  for (const auto &[k, b] : blocks) {
    Cell &c = cells[static_cast<size_t>(k.first)][static_cast<size_t>(k.second)];
    c.label = label + " ";
    bool first = true;
    for (int d : b.devices) {
      c.label += (first ? "" : ",") + std::to_string(d);
      first = false;
    }
    int64_t width = static_cast<int64_t>(b.width_frac * static_cast<double>(base_width) *
                                         height_to_width);
    const int64_t height =
        two_d ? static_cast<int64_t>(b.height_frac * static_cast<double>(base_height)) : 1;
    width = std::min<int64_t>(std::max<int64_t>(width, opt.min_width), opt.max_width);
    auto [left, lrem] = py_divmod(width - static_cast<int64_t>(c.label.size()) - 2, 2);
    auto [top, trem] = py_divmod(height - 2, 2);
    c.left = std::max<int64_t>(left, 0);
    c.right = std::max<int64_t>(left + lrem, 0);
    c.top = std::max<int64_t>(top, 0);
    c.bottom = std::max<int64_t>(top + trem, 0);
  }

  std::vector<int64_t> widths(static_cast<size_t>(cols), 1);
  for (size_t j = 0; j < widths.size(); ++j) {
    widths[j] = 0;
    for (size_t i = 0; i < cells.size(); ++i) widths[j] = std::max(widths[j], cells[i][j].width());
  }

  const BoxChars &b = opt.ascii ? kAscii : kSquare;
  std::string out = rule(b, b.tl, b.tm, b.tr, widths);
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i) out += rule(b, b.ml, b.mm, b.mr, widths);
    int64_t height = 0;
    for (const Cell &c : cells[i]) height = std::max(height, c.height());
    for (int64_t line = 0; line < height; ++line) {
      out += b.v;
      for (size_t j = 0; j < cells[i].size(); ++j) {
        const Cell &c = cells[i][j];
        if (line == c.top) {
          // Padding around a label centred in what the padding leaves.
          const int64_t inner = widths[j] - c.left - c.right;
          const int64_t excess = inner - static_cast<int64_t>(c.label.size());
          const int64_t before = excess / 2;
          out += std::string(static_cast<size_t>(c.left + before), ' ') + c.label +
                 std::string(static_cast<size_t>(excess - before + c.right), ' ');
        } else {
          out += std::string(static_cast<size_t>(widths[j]), ' ');
        }
        out += b.v;
      }
      out += "\n";
    }
  }
  out += rule(b, b.bl, b.bm, b.br, widths);
  return out;
}

}  // namespace spmd
