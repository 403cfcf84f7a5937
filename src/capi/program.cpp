// Programs (spmd/experimental/program.h): handles and argument checks,
// then exec/program.
#define SPMD_EXPERIMENTAL
#include "base/dtype.hpp"
#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "exec/program/program.hpp"
#include "spmd/experimental/program.h"

using namespace spmd;
using namespace spmd::capi;

struct spmd_x_program {
  std::shared_ptr<Program> impl;
};

namespace spmd::capi {
template <> struct KindOf<spmd_x_program> {
  static constexpr HandleKind kind = HandleKind::Program;
  static constexpr const char *name = "spmd_x_program";
};
}  // namespace spmd::capi

extern "C" {

spmd_status spmd_x_program_create(spmd_runtime *runtime, spmd_x_program **out) {
  return guard(__func__, [&] {
    const auto &rt = use(runtime, "runtime");
    produce(out, [&] { return new_handle<spmd_x_program>(std::make_shared<Program>(rt.impl)); });
  });
}

void spmd_x_program_destroy(spmd_x_program *program) { destroy_handle(program); }

spmd_status spmd_x_program_input(spmd_x_program *program, const spmd_sharding *sharding,
                                 spmd_dtype dtype, size_t ndim, const int64_t *shape,
                                 spmd_array **out) {
  return guard(__func__, [&] {
    Program &p = *use(program, "program").impl;
    const auto &s = use(sharding, "sharding");
    check_dtype("dtype", dtype);
    Shape global = checked_shape("shape", ndim, shape);
    out_arg(out);
    s.impl->check_rank(global);
    *out = new_handle<spmd_array>(p.add_input(s.impl, valid_dtype(dtype), std::move(global)));
  });
}

spmd_status spmd_x_program_output(spmd_x_program *program, const spmd_array *value,
                                  const spmd_sharding *sharding) {
  return guard(__func__, [&] {
    Program &p = *use(program, "program").impl;
    const ArrayHold v(value, "value", Abstract::Allowed);
    ShardingPtr s = sharding == nullptr ? nullptr : use(sharding, "sharding").impl;
    p.add_output(v.ptr(), std::move(s), "value");
  });
}

spmd_status spmd_x_program_compile(spmd_x_program *program) {
  return guard(__func__, [&] { use(program, "program").impl->compile(); });
}

spmd_status spmd_x_program_donate(spmd_x_program *program, size_t input) {
  return guard(__func__, [&] { use(program, "program").impl->donate(input); });
}

spmd_status spmd_x_program_input_count(const spmd_x_program *program, size_t *out) {
  return guard(__func__, [&] {
    const Program &p = *use(program, "program").impl;
    produce(out, [&] { return p.input_count(); });
  });
}

spmd_status spmd_x_program_output_count(const spmd_x_program *program, size_t *out) {
  return guard(__func__, [&] {
    const Program &p = *use(program, "program").impl;
    produce(out, [&] { return p.output_count(); });
  });
}

spmd_status spmd_x_program_run(const spmd_x_program *program, size_t n_inputs,
                               const spmd_array *const *inputs, size_t n_outputs,
                               spmd_array **outputs) {
  return guard(__func__, [&] {
    const Program &p = *use(program, "program").impl;
    if (n_inputs > 0 && inputs == nullptr) invalid("inputs: NULL with ", n_inputs, " inputs");
    if (!p.compiled()) invalid("program: is still recording; compile it before running it");
    if (outputs == nullptr) invalid("outputs: NULL pointer");
    if (n_outputs != p.output_count())
      invalid("n_outputs: ", n_outputs, " for a program of ", p.output_count(),
              p.output_count() == 1 ? " output" : " outputs");
    std::vector<ArrayHold> holds;
    std::vector<ArrayPtr> arrays;
    std::vector<ArraySlot *> slots;
    holds.reserve(n_inputs);
    for (size_t k = 0; k < n_inputs; ++k) {
      holds.emplace_back(inputs[k], cat("inputs[", k, "]").c_str());
      arrays.push_back(holds.back().ptr());
      slots.push_back(holds.back().slot());
    }
    std::vector<ArrayPtr> results = p.run(arrays, slots);
    // Donated inputs are retired whether or not an op reused their buffers
    // (an op that did has consumed its slot already).
    for (size_t k = 0; k < n_inputs; ++k)
      if (p.donated(k)) slots[k]->consume("spmd_x_program_run");
    // Handles for every output before any is handed out, so a failure
    // leaves outputs untouched and nothing leaked.
    std::vector<std::unique_ptr<spmd_array, void (*)(spmd_array *)>> made;
    for (auto &r : results) made.emplace_back(new_handle<spmd_array>(std::move(r)), spmd_array_destroy);
    for (size_t k = 0; k < made.size(); ++k) outputs[k] = made[k].release();
  });
}

spmd_status spmd_x_program_text(const spmd_x_program *program, char **out) {
  return guard(__func__, [&] {
    const Program &p = *use(program, "program").impl;
    produce(out, [&] { return to_c_string(p.text()); });
  });
}

}  // extern "C"
