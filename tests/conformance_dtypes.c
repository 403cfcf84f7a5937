/* Family "dtypes": JAX's element types under the global ops, in the
 * propagation family's form (conformance/families/dtypes.py): every pair of
 * the twelve dtypes through add and mul (the promoted type and its values,
 * integer wraparound included), jnp.astype between every pair, Python
 * scalars beside the narrow integers, sums, means, maxima, argmax, cumsum,
 * take, one_hot and integer products of the types int8, int16, uint16 and
 * uint32 added beside the first eight. */
#include "conformance_cases.h"

void conformance_dtypes(conformance_tally *t) { conformance_op_cases(t, "dtypes", 0); }
