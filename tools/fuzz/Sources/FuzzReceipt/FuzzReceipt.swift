import FuzzSupport
import LedgerAppStore

/// libFuzzer entry: verifyReceipt responses (`ingest --type receipt`, `POST /v1/apple/receipts`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.decode(Array(UnsafeBufferPointer(start: data, count: size)), as: .receipt)
    return 0
}

/// The entry point SwiftPM links `main` to.
@_cdecl("FuzzReceipt_main")
public func fuzzReceiptMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzOne)
}
