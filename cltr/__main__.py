from cltr.cli import main

main()
