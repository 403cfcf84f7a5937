module github.com/libspmd/libspmd/bindings/go

go 1.19
