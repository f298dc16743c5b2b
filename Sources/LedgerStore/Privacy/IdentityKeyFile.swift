#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import LedgerErrors

/// `DIR/identity.key`: the keys that seal the `identities` table, by generation, one line each
/// (`<generation> <64 hex digits>`). It lives beside the data file, never in it: LMDB keeps the bytes of deleted
/// rows in freed pages, so a key stored in data.mdb would outlive its deletion. `forget` writes a new generation,
/// seals every remaining row with it, and then writes the file again without the old one, which is how a deleted
/// row becomes unreadable wherever its bytes remain (docs/privacy.md).
struct IdentityKeyFile {
    static let name = "identity.key"

    static func path(_ directory: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// The keys in the file; empty when there is none.
    static func read(_ directory: String) throws(LedgerError) -> [UInt64: SymmetricKey] {
        let path = path(directory)
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw LedgerError(code: .permissionDenied, message: "cannot read the identity key \(path)")
        }
        var keys: [UInt64: SymmetricKey] = [:]
        for (number, line) in text.split(separator: "\n").enumerated() {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let generation = UInt64(parts[0]), let bytes = bytes(ofHex: parts[1]), bytes.count == 32
            else {
                throw LedgerError.corrupted("line \(number + 1) of the identity key \(path) is not `<generation> <64 hex digits>`")
            }
            keys[generation] = SymmetricKey(data: bytes)
        }
        return keys
    }

    /// Replaces the file with `keys`, durably: a new file synced, renamed over the old one, the directory synced.
    static func write(_ directory: String, _ keys: [(generation: UInt64, key: SymmetricKey)]) throws(LedgerError) {
        let path = path(directory)
        let staged = path + ".new"
        var text = ""
        for (generation, key) in keys.sorted(by: { $0.generation < $1.generation }) {
            text += "\(generation) " + key.withUnsafeBytes { hex($0) } + "\n"
        }
        let fd = open(staged, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("cannot create \(staged)") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else { throw failure("cannot write \(staged)") }
        guard rename(staged, path) == 0 else { throw failure("cannot rename \(staged) to \(path)") }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)
            close(dir)
        }
    }

    private static func failure(_ what: String) -> LedgerError {
        let reason = String(cString: strerror(errno))
        return LedgerError(code: errno == ENOSPC ? .storageFull : .storageError, message: "\(what): \(reason)")
    }
}
