# DELIBERATELY BROKEN: the negative control of bindings/julia/check_julia.py
# (CTest binding_julia_checker_rejects_bad_code). The checker must report
# exactly the four problems marked below, and nothing else. The normal run of
# the checker skips this directory.
module Bad

const libspmd = Ref{String}("libspmd")

# A correct ccall, which must not be reported.
good(mesh, out) = ccall((:spmd_mesh_ndim, libspmd[]), Cint, (Ptr{Cvoid}, Ptr{Csize_t}), mesh, out)

# PROBLEM arity: spmd_mesh_size takes two arguments, not one.
wrong_count(mesh) = ccall((:spmd_mesh_size, libspmd[]), Cint, (Ptr{Cvoid},), mesh)

# PROBLEM type: spmd_array_size writes an int64_t, not a Cint.
wrong_type(a, out) = ccall((:spmd_array_size, libspmd[]), Cint, (Ptr{Cvoid}, Ptr{Cint}), a, out)

# PROBLEM unknown-symbol: libspmd has no such function.
unknown() = ccall((:spmd_no_such_function, libspmd[]), Cint, ())

# PROBLEM syntax: an argument missing between two commas.
broken(x) = f(x,, 2)

end # module
