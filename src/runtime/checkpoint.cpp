#include "runtime/checkpoint.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "backend/host/copy.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "runtime/rendezvous.hpp"

namespace spmd {

namespace {

constexpr const char *kMagic = "libspmd checkpoint 1";

std::string index_path(const std::string &dir) { return dir + "/index.txt"; }
std::string block_file(size_t k) { return cat("block-", k, ".bin"); }

[[noreturn]] void io_failed(const std::string &what, const std::string &path) {
  const int e = errno;
  invalid(what, " '", path, "': ", std::strerror(e));
}

struct Saved {
  spmd_dtype dtype = SPMD_F32;
  Shape shape;
  struct Block {
    std::string file;
    Box box;
  };
  std::vector<Block> blocks;
};

// The blocks of an array in the order of its shards' first replicas.
std::vector<size_t> first_replicas(const Array &a) {
  std::vector<size_t> shards;
  for (size_t i = 0; i < a.shard_count(); ++i)
    if (a.shard(i).replica_id == 0 && !a.shard(i).box.empty()) shards.push_back(i);
  return shards;
}

void write_file(const std::string &path, const void *data, size_t bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) io_failed("directory: cannot create", path);
  const bool ok = bytes == 0 || std::fwrite(data, 1, bytes, f) == bytes;
  if (std::fclose(f) != 0 || !ok) io_failed("directory: cannot write", path);
}

Saved read_index(const std::string &dir) {
  const std::string path = index_path(dir);
  std::ifstream in(path);
  if (!in) io_failed("directory: no checkpoint index", path);
  std::string line;
  std::getline(in, line);
  if (line != kMagic)
    invalid("directory: '", path, "' is not a libspmd checkpoint index (its first line is '",
            line.substr(0, 60), "', expected '", kMagic, "')");
  Saved s;
  auto bad = [&](const std::string &why) -> void {
    invalid("directory: '", path, "' is damaged: ", why);
  };
  std::string key, name;
  in >> key >> name;
  if (key != "dtype") bad("no dtype line");
  bool found = false;
  for (int d = 0; d < 64 && !found; ++d) {
    const auto dtype = static_cast<spmd_dtype>(d);
    if (dtype_valid(dtype) && name == dtype_name(dtype)) {
      s.dtype = dtype;
      found = true;
    }
  }
  if (!found) bad(cat("unknown dtype '", name, "'"));
  in >> key;
  if (key != "shape") bad("no shape line");
  std::getline(in, line);
  std::istringstream dims(line);
  for (int64_t d; dims >> d;) s.shape.push_back(d);
  s.shape = checked_shape("the saved shape", s.shape.size(), s.shape.data());
  size_t n = 0;
  in >> key >> n;
  if (key != "blocks") bad("no blocks line");
  const size_t nd = s.shape.size();
  int64_t covered = 0;
  for (size_t k = 0; k < n; ++k) {
    Saved::Block b;
    b.box.start.resize(nd);
    b.box.stop.resize(nd);
    in >> key >> b.file;
    for (auto &v : b.box.start) in >> v;
    for (auto &v : b.box.stop) in >> v;
    if (!in || key != "block") bad(cat("block line ", k, " of ", n, " is missing or short"));
    if (b.file.find('/') != std::string::npos) bad(cat("block file '", b.file, "' names a path"));
    for (size_t d = 0; d < nd; ++d)
      if (b.box.start[d] < 0 || b.box.stop[d] > s.shape[d] || b.box.start[d] > b.box.stop[d])
        bad(cat("block ", k, " lies outside the shape"));
    covered += b.box.elements();
    s.blocks.push_back(std::move(b));
  }
  if (covered != shape_elements(s.shape))
    bad(cat("its blocks cover ", covered, " elements of ", shape_elements(s.shape)));
  return s;
}

std::vector<std::byte> read_file(const std::string &path, size_t bytes) {
  std::vector<std::byte> data(bytes);
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) io_failed("directory: cannot open", path);
  const size_t got = bytes ? std::fread(data.data(), 1, bytes, f) : 0;
  const int extra = std::fgetc(f);
  std::fclose(f);
  if (got != bytes || extra != EOF)
    invalid("directory: '", path, "' holds ", got == bytes ? "more" : "fewer", " than the ", bytes,
            " bytes its index gives it");
  return data;
}

}  // namespace

void save_array(const Array &a, const std::string &dir) {
  Runtime &rt = a.runtime();
  if (dir.empty()) invalid("directory: empty");
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    io_failed("directory: cannot make", dir);
  struct stat st;
  if (::stat(index_path(dir).c_str(), &st) == 0)
    invalid("directory: '", dir, "' already holds a checkpoint (", index_path(dir),
            "); remove it or choose another directory");
  // Every process has checked before any writes, so none overwrites a
  // checkpoint another would refuse.
  const auto deadline = deadline_after(collective_timeout(0, "SPMD_COLLECTIVE_TIMEOUT_MS"));
  if (rt.transport()) rt.transport()->barrier(deadline);

  const std::vector<size_t> blocks = first_replicas(a);
  a.block_until_ready();
  for (size_t k = 0; k < blocks.size(); ++k) {
    const size_t i = blocks[k];
    if (!a.addressable(i)) continue;
    std::vector<std::byte> data(a.shard_bytes(i));
    a.shard_read(i, data.data(), data.size());
    write_file(dir + "/" + block_file(k), data.data(), data.size());
  }
  if (rt.transport()) rt.transport()->barrier(deadline);
  if (rt.process_index() == 0) {
    std::ostringstream index;
    index << kMagic << "\ndtype " << dtype_name(a.dtype()) << "\nshape";
    for (int64_t d : a.shape()) index << ' ' << d;
    index << "\nblocks " << blocks.size() << '\n';
    for (size_t k = 0; k < blocks.size(); ++k) {
      const Box &b = a.shard(blocks[k]).box;
      index << "block " << block_file(k);
      for (int64_t v : b.start) index << ' ' << v;
      for (int64_t v : b.stop) index << ' ' << v;
      index << '\n';
    }
    const std::string text = index.str(), tmp = index_path(dir) + ".tmp";
    write_file(tmp, text.data(), text.size());
    if (std::rename(tmp.c_str(), index_path(dir).c_str()) != 0)
      io_failed("directory: cannot write", index_path(dir));
  }
  if (rt.transport()) rt.transport()->barrier(deadline);
}

ArrayPtr load_array(const ShardingPtr &sharding, const std::string &dir) {
  if (dir.empty()) invalid("directory: empty");
  const Saved saved = read_index(dir);
  sharding->check_rank(saved.shape);
  auto out = std::make_shared<Array>(sharding, saved.dtype, saved.shape);
  const size_t es = dtype_size(saved.dtype);
  // Each saved block is read once, when the first shard here needs it.
  std::map<size_t, std::vector<std::byte>> cache;
  for (size_t i = 0; i < out->shard_count(); ++i) {
    if (!out->addressable(i)) continue;
    const Box &want = out->shard(i).box;
    if (want.empty()) continue;
    const Shape extent = want.extent();
    std::vector<std::byte> block(out->shard_bytes(i));
    for (size_t k = 0; k < saved.blocks.size(); ++k) {
      const Box &have = saved.blocks[k].box;
      const Box overlap = intersect(have, want);
      if (overlap.empty()) continue;
      auto it = cache.find(k);
      if (it == cache.end())
        it = cache.emplace(k, read_file(dir + "/" + saved.blocks[k].file,
                                        static_cast<size_t>(have.elements()) * es))
                 .first;
      Shape from(overlap.ndim()), to(overlap.ndim());
      for (size_t d = 0; d < overlap.ndim(); ++d) {
        from[d] = overlap.start[d] - have.start[d];
        to[d] = overlap.start[d] - want.start[d];
      }
      host::copy_box(it->second.data(), have.extent(), from, block.data(), extent, to,
                     overlap.extent(), es);
    }
    out->shard_write(i, block.data(), block.size());
  }
  return out;
}

}  // namespace spmd
