import Foundation

/// A one-shot result handed from the writer thread to a blocked caller.
final class ResultBox: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<[AppendResult], LedgerError>?

    func set(_ r: Result<[AppendResult], LedgerError>) {
        condition.lock()
        result = r
        condition.signal()
        condition.unlock()
    }

    func wait() -> Result<[AppendResult], LedgerError> {
        condition.lock()
        defer { condition.unlock() }
        while result == nil { condition.wait() }
        return result!
    }
}
