import FuzzSupport
import LedgerAppStore

/// libFuzzer entry: Envelopes (docs/inputs.md) and bare documents, type detected (`POST /v1/events`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.decode(Array(UnsafeBufferPointer(start: data, count: size)), as: nil)
    return 0
}

/// The entry point SwiftPM links `main` to.
@_cdecl("FuzzEnvelope_main")
public func fuzzEnvelopeMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzOne)
}
