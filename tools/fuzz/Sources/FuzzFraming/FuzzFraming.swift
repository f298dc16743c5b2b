import FuzzSupport
import LedgerServer

/// libFuzzer entry: a request body cut into inputs (NDJSON, documents back to back, bare JWS lines), then each
/// input decoded as `POST /v1/events` does.
///
/// Framing's own promises are checked: the pieces are in order, do not overlap, are neither empty nor padded with
/// whitespace, and leave no byte of the body but whitespace outside them (nothing a caller sends is dropped unseen).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    let pieces = InputFraming.split(body)
    var covered = 0
    for piece in pieces {
        precondition(!piece.isEmpty, "an empty piece")
        precondition(piece.startIndex >= covered, "pieces overlap or are out of order")
        precondition(!InputFraming.isSpace(piece.first!) && !InputFraming.isSpace(piece.last!), "a padded piece")
        precondition(body[covered..<piece.startIndex].allSatisfy(InputFraming.isSpace), "bytes left outside every piece")
        covered = piece.endIndex
    }
    precondition(body[covered...].allSatisfy(InputFraming.isSpace), "bytes left after the last piece")
    for piece in pieces.prefix(64) { Fuzz.decode(Array(piece), as: nil) }
    return 0
}
