internal import CLMDBGuard

/// Runs one call into LMDB marked as such, so that a fault inside it (LMDB reading a damaged page) is known for what
/// it is: `DamagedFileFaults` turns it into a damaged-ledger error instead of a crash.
@inline(__always)
func insideLMDB<R>(_ call: () throws -> R) rethrows -> R {
    storeledger_lmdb_enter()
    defer { storeledger_lmdb_leave() }
    return try call()
}

/// What a process does when it faults reading a damaged data file.
///
/// LMDB trusts its file: on a damaged page it can read outside the page or the map (SIGSEGV inside LMDB), or past the
/// end of the file (SIGBUS, inside LMDB or in the code that reads a value LMDB returned; the process maps no other
/// file). With the handler installed, such a fault writes the given texts and exits with `status`; a SIGSEGV outside
/// LMDB still ends the process with its signal, since it is a bug, not a damaged file. (`Environment.checkStructure` finds the damage
/// before anything reads it, for the commands that can afford to walk the whole file.)
public enum DamagedFileFaults {
    /// Installs the handler of SIGSEGV and SIGBUS. `standardOutput` and `standardError` are written as they are.
    public static func exit(status: Int32, standardOutput: String?, standardError: String?) {
        storeledger_lmdb_fault_handler_install(standardOutput, standardError, status)
    }

    /// Whether this thread is inside a call into LMDB now.
    public static var insideLMDBCall: Bool { storeledger_lmdb_inside() != 0 }
}
