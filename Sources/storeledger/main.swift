print("storeledger")
