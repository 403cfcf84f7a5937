// The polynomial coefficients of the float32 draws, shared by the scalar
// code (kernels/random.cpp) and its eight-lane form (kernels/random_avx2.cpp),
// so the two cannot drift apart. Highest degree first.
#pragma once

namespace spmd::rng::constants {

// erfinv, single precision (Giles): w = -log(1 - x^2); for w < 5 a degree-8
// polynomial in w - 2.5, else one in sqrt(w) - 3.
constexpr float kErfinvF32Small[9] = {
    2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f, 0.00021858087f,
    -0.00125372503f, -0.00417768164f, 0.246640727f,    1.50140941f};
constexpr float kErfinvF32Large[9] = {
    -0.000200214257f, 0.000100950558f, 0.00134934322f, -0.00367342844f, 0.00573950773f,
    -0.0076224613f,   0.00943887047f,  1.00167406f,    2.83297682f};

// log1p(x) for |x| < sqrt(2) - 1: x - x^2/2 + x^3 * P(x) / Q(x) (Cephes),
// in the type of x.
constexpr double kLog1pThreshold = 0.41421356237309504880;  // sqrt(2) - 1
constexpr double kLog1pNumerator[7] = {
    4.5270000862445199635215E-5, 4.9854102823193375972212E-1, 6.5787325942061044846969E0,
    2.9911919328553073277375E1,  6.0949667980987787057556E1,  5.7112963590585538103336E1,
    2.0039553499201281259648E1};
constexpr double kLog1pDenominator[7] = {
    1.0,                         1.5062909083469192043167E1, 8.3047565967967209469434E1,
    2.2176239823732856465394E2,  3.0909872225312059774938E2, 2.1642788614495947685003E2,
    6.0118660497603843919306E1};

// Cephes logf: log(1 + f) = f - f^2/2 + f^3 * P(f) on the reduced mantissa,
// log(2) split into kLogQ2 + kLogQ1.
constexpr float kLogP[9] = {7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
                            -1.2420140846E-1f, 1.4249322787E-1f,  -1.6668057665E-1f,
                            2.0000714765E-1f,  -2.4999993993E-1f, 3.3333331174E-1f};
constexpr float kLogQ1 = -2.12194440e-4f, kLogQ2 = 0.693359375f;

}  // namespace spmd::rng::constants
