import Crypto
import Foundation
import SwiftASN1
import X509

// MARK: - A TestPKI kept in files

extension TestPKI {
    /// The files of a PKI folder (examples/pki): certificates in DER (what a configuration's `trustedRoots` names),
    /// private keys in PKCS#8 PEM. The keys are test-only: whoever reads them can sign anything this PKI signs.
    public enum FileName {
        public static let root = "root.cer"
        public static let intermediate = "intermediate.cer"
        public static let leaf = "leaf.cer"
        public static let rootKey = "root.key.pem"
        public static let intermediateKey = "intermediate.key.pem"
        public static let leafKey = "leaf.key.pem"
    }

    /// Reads a PKI that `write(to:)` wrote. Throws naming the file that is missing or unreadable.
    public init(contentsOf directory: String) throws {
        func bytes(_ name: String) throws -> [UInt8] {
            let path = (directory as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
            }
            return [UInt8](data)
        }
        func key(_ name: String) throws -> P256.Signing.PrivateKey {
            try P256.Signing.PrivateKey(
                pemRepresentation: String(decoding: try bytes(name), as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            )
        }
        self.init(
            rootKey: try key(FileName.rootKey),
            intermediateKey: try key(FileName.intermediateKey),
            leafKey: try key(FileName.leafKey),
            root: try Certificate(derEncoded: try bytes(FileName.root)),
            intermediate: try Certificate(derEncoded: try bytes(FileName.intermediate)),
            leaf: try Certificate(derEncoded: try bytes(FileName.leaf))
        )
    }

    private init(
        rootKey: P256.Signing.PrivateKey,
        intermediateKey: P256.Signing.PrivateKey,
        leafKey: P256.Signing.PrivateKey,
        root: Certificate,
        intermediate: Certificate,
        leaf: Certificate
    ) {
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
    }

    /// Writes the three certificates (DER) and the three private keys (PEM) into `directory`, creating it.
    public func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files: [(String, [UInt8])] = [
            (FileName.root, Self.der(root)), (FileName.intermediate, Self.der(intermediate)),
            (FileName.leaf, Self.der(leaf)), (FileName.rootKey, Array(rootKey.pemRepresentation.utf8) + [0x0A]),
            (FileName.intermediateKey, Array(intermediateKey.pemRepresentation.utf8) + [0x0A]),
            (FileName.leafKey, Array(leafKey.pemRepresentation.utf8) + [0x0A]),
        ]
        for (name, bytes) in files {
            try Data(bytes).write(to: URL(fileURLWithPath: (directory as NSString).appendingPathComponent(name)))
        }
    }
}
