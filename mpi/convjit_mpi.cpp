// The callbacks of convjit_communicator_t on an MPI communicator.
#include "convjit/convjit_mpi.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <vector>

#define CONVJIT_MPI_EXPORT __attribute__((visibility("default")))

namespace {

struct Context {
  MPI_Comm comm = MPI_COMM_NULL;
};

MPI_Comm comm_of(void* context) { return static_cast<Context*>(context)->comm; }

// MPI counts are ints: larger messages go in pieces of at most 1 GiB.
constexpr std::size_t kPiece = std::size_t{1} << 30;

int allgather(void* context, const void* send, void* receive, std::size_t bytes) {
  if (bytes > kPiece) return MPI_ERR_COUNT;  // convjit gathers names and bitmaps, never this much
  return MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, receive, static_cast<int>(bytes),
                       MPI_BYTE, comm_of(context));
}

int broadcast(void* context, void* buffer, std::size_t bytes, int root) {
  auto* bytes_at = static_cast<char*>(buffer);
  for (std::size_t done = 0; done < bytes; done += kPiece) {
    const int piece = static_cast<int>(std::min(kPiece, bytes - done));
    if (int rc = MPI_Bcast(bytes_at + done, piece, MPI_BYTE, root, comm_of(context));
        rc != MPI_SUCCESS)
      return rc;
  }
  return MPI_SUCCESS;
}

int barrier(void* context) { return MPI_Barrier(comm_of(context)); }

// The lowest rank of each rank's node.
int node_of(MPI_Comm comm, int rank, int ranks_per_node, int* node) {
  if (ranks_per_node > 0) {
    *node = rank - rank % ranks_per_node;
    return MPI_SUCCESS;
  }
  MPI_Comm shared = MPI_COMM_NULL;
  int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
  if (rc != MPI_SUCCESS) return rc;
  rc = MPI_Allreduce(&rank, node, 1, MPI_INT, MPI_MIN, shared);
  MPI_Comm_free(&shared);
  return rc;
}

bool g_started_mpi = false;

}  // namespace

extern "C" {

CONVJIT_MPI_EXPORT int convjit_mpi_communicator(MPI_Comm comm, int ranks_per_node,
                                                convjit_communicator_t* out) {
  if (out == nullptr || ranks_per_node < 0) return MPI_ERR_ARG;
  auto* context = new Context;
  int rc = MPI_Comm_dup(comm, &context->comm);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(context->comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 0, node = 0;
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(context->comm, &rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(context->comm, &size);
  if (rc == MPI_SUCCESS) rc = node_of(context->comm, rank, ranks_per_node, &node);
  if (rc != MPI_SUCCESS) {
    if (context->comm != MPI_COMM_NULL) MPI_Comm_free(&context->comm);
    delete context;
    return rc;
  }
  *out = {context, rank, size, node, allgather, broadcast, barrier};
  return MPI_SUCCESS;
}

CONVJIT_MPI_EXPORT int convjit_mpi_communicator_free(convjit_communicator_t* comm) {
  if (comm == nullptr || comm->context == nullptr) return MPI_SUCCESS;
  auto* context = static_cast<Context*>(comm->context);
  const int rc = MPI_Comm_free(&context->comm);
  delete context;
  *comm = {};
  return rc;
}

CONVJIT_MPI_EXPORT int convjit_mpi_world_init(int ranks_per_node, convjit_communicator_t* out) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        rc != MPI_SUCCESS)
      return rc;
    g_started_mpi = true;
  }
  return convjit_mpi_communicator(MPI_COMM_WORLD, ranks_per_node, out);
}

CONVJIT_MPI_EXPORT int convjit_mpi_world_finalize(convjit_communicator_t* comm) {
  const int rc = convjit_mpi_communicator_free(comm);
  if (g_started_mpi) {
    g_started_mpi = false;
    return MPI_Finalize();
  }
  return rc;
}

}  // extern "C"
