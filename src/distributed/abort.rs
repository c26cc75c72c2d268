//! Ending the whole MPI job when one rank panics.

use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator;

/// Makes a panic on this rank end the whole MPI job (`MPI_Abort` on the world communicator,
/// error code 1) once the panic's message is printed, for a program to call right after
/// `mpi::initialize`.
///
/// Without it, a rank that panics while the others wait in a collective (an assertion on its
/// shard, a shape error in its loss) unwinds to the drop of its `mpi::environment::Universe`,
/// whose `MPI_Finalize` waits for the other ranks, which wait for it: the job hangs instead of
/// failing. The hook runs for every panic, caught or not (`std::panic::catch_unwind` does not
/// stop it); it does nothing once MPI is finalised or before it is initialised.
pub fn abort_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        if mpi::is_initialized() && !mpi::is_finalized() {
            SimpleCommunicator::world().abort(1);
        }
    }));
}
