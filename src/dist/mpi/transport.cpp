#include "dist/mpi/transport.hpp"

#include <mpi.h>

#include "base/error.hpp"
#include "dist/mpi/errors.hpp"
#include "dist/mpi/polling.hpp"
#include "dist/mpi/startup.hpp"

namespace spmd::dist::mpi {

namespace {

// The communicator behind a Fortran handle, refused where MPI says it is
// none. (OpenMPI answers a handle it never gave with a null pointer rather
// than MPI_COMM_NULL.)
MPI_Comm communicator_of(int handle) {
  const MPI_Comm comm = MPI_Comm_f2c(handle);
  bool none = comm == MPI_COMM_NULL;
#ifdef OPEN_MPI
  none = none || comm == nullptr;
#endif
  if (none)
    invalid("options->mpi_comm: ", handle,
            " is no communicator (MPI_COMM_NULL, or a handle MPI never gave); pass "
            "MPI_Comm_c2f of a live communicator, as spmd_runtime_create_mpi does");
  return comm;
}

// Two copies of `parent` for the transport: the caller's communicator then
// carries none of libspmd's messages, and failures on the copies return
// instead of ending the process. The parent's own error handler is lent
// MPI_ERRORS_RETURN for the calls made on it here, then given back.
void duplicate(MPI_Comm parent, Deadline deadline, MPI_Comm &control, MPI_Comm &data) {
  MPI_Errhandler callers = MPI_ERRHANDLER_NULL;
  check(MPI_Comm_get_errhandler(parent, &callers), "MPI_Comm_get_errhandler");
  check(MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  struct GiveBack {
    MPI_Comm parent;
    MPI_Errhandler &callers;
    ~GiveBack() {
      MPI_Comm_set_errhandler(parent, callers);
      MPI_Errhandler_free(&callers);
    }
  } give_back{parent, callers};

  int inter = 0;
  check(MPI_Comm_test_inter(parent, &inter), "MPI_Comm_test_inter");
  if (inter) invalid("options->mpi_comm: an intercommunicator; pass an intracommunicator");
  int size = 0;
  check(MPI_Comm_size(parent, &size), "MPI_Comm_size");
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Status statuses[2];
  check(MPI_Comm_idup(parent, &control, &requests[0]), "MPI_Comm_idup");
  check(MPI_Comm_idup(parent, &data, &requests[1]), "MPI_Comm_idup");
  if (!poll_until(requests, statuses, deadline, "MPI_Test (MPI_Comm_idup)"))
    // A duplication cannot be cancelled: its requests are left to MPI.
    fail(SPMD_ERR_TIMEOUT, "not every one of the communicator's ", size,
         " processes came to create its runtime before the deadline (MPI_Comm_idup); every "
         "process must create one");
  MPI_Comm_set_errhandler(control, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(data, MPI_ERRORS_RETURN);
}

}  // namespace

std::unique_ptr<MpiTransport> MpiTransport::create(const TransportConfig &config) {
  start_mpi();
  const MPI_Comm parent = config.comm_given ? communicator_of(config.comm) : MPI_COMM_WORLD;
  MPI_Comm control = MPI_COMM_NULL, data = MPI_COMM_NULL;
  duplicate(parent, config.deadline, control, data);
  int size = 0;
  check(MPI_Comm_size(control, &size), "MPI_Comm_size");
  // A process's index in the runtime is its rank in the communicator.
  std::vector<int> processes(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) processes[static_cast<size_t>(r)] = r;
  return std::make_unique<MpiTransport>(
      std::make_unique<MpiCommunicator>(control, data, std::move(processes)));
}

MpiTransport::MpiTransport(std::unique_ptr<MpiCommunicator> everyone)
    : everyone_(std::move(everyone)) {}

MpiTransport::~MpiTransport() { groups_.clear(); }

Communicator &MpiTransport::group(const std::vector<int> &members, Deadline deadline) {
  std::lock_guard<std::mutex> lock(groups_mu_);
  auto it = groups_.find(members);
  if (it == groups_.end())
    it = groups_.emplace(members, everyone_->make_group(members, deadline)).first;
  return *it->second;
}

}  // namespace spmd::dist::mpi
