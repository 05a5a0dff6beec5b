from .decode import main

main()
